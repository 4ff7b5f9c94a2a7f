package notify_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
)

func TestParseTime(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // FormatTime of the result; "" means rejected
	}{
		{"milliseconds are kept", "2026-01-02T03:04:05.123Z", "2026-01-02T03:04:05.123Z"},
		{"no fraction gets three zeros", "2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000Z"},
		{"nine fraction digits are truncated to milliseconds", "2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.123Z"},
		{"one fraction digit", "2026-01-02T03:04:05.5Z", "2026-01-02T03:04:05.500Z"},
		{"date only is refused", "2026-01-02", ""},
		{"an offset is refused", "2026-01-02T03:04:05+01:00", ""},
		{"a one-digit hour is refused", "2026-01-02T3:04:05Z", ""},
		{"ten fraction digits are refused", "2026-01-02T03:04:05.1234567890Z", ""},
		{"lower-case z is refused", "2026-01-02T03:04:05z", ""},
		{"a space separator is refused", "2026-01-02 03:04:05Z", ""},
		{"an impossible date is refused", "2026-02-30T03:04:05Z", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := notify.ParseTime(tt.in)
			if tt.want == "" {
				if !errors.Is(err, notify.ErrTimeFormat) {
					t.Fatalf("ParseTime(%q) = %v, %v; want ErrTimeFormat", tt.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTime(%q): %v", tt.in, err)
			}
			if s := notify.FormatTime(got); s != tt.want {
				t.Errorf("FormatTime(ParseTime(%q)) = %s, want %s", tt.in, s, tt.want)
			}
		})
	}
}

func TestFormatTimeIsUTCWithThreeFractionDigits(t *testing.T) {
	loc := time.FixedZone("x", 7*3600)
	got := notify.FormatTime(time.Date(2026, 1, 2, 10, 4, 5, 0, loc))
	if got != "2026-01-02T03:04:05.000Z" {
		t.Errorf("got %s", got)
	}
}

func TestParseID(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"24 hex digits", "5f1e2d3c4b5a697887766554", true},
		{"upper-case hex", "5F1E2D3C4B5A697887766554", true},
		{"too short is not found", "5f1e2d3c", false},
		{"not hex is not found", "zzzzzzzzzzzzzzzzzzzzzzzz", false},
		{"empty is not found", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := notify.ParseID(tt.in)
			if tt.ok {
				if err != nil || id.Hex() != strings.ToLower(tt.in) {
					t.Fatalf("ParseID(%q) = %s, %v", tt.in, id, err)
				}
				return
			}
			if !errors.Is(err, notify.ErrNotFound) {
				t.Fatalf("ParseID(%q) err = %v, want ErrNotFound", tt.in, err)
			}
		})
	}
}

func TestNewIDIsUniqueAndTimed(t *testing.T) {
	seen := map[notify.ID]bool{}
	for range 1000 {
		id := notify.NewID()
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
	if d := time.Since(notify.NewID().Timestamp()); d < -time.Second || d > time.Minute {
		t.Errorf("timestamp off by %v", d)
	}
}

func TestFieldsJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		out  string
	}{
		{"key order is kept", `{"b":1,"a":2,"c":{"z":1,"y":2}}`, `{"b":1,"a":2,"c":{"z":1,"y":2}}`},
		{"numbers keep their value", `{"i":1,"f":1.5,"big":3000000000,"neg":-2,"exp":1e3}`, `{"i":1,"f":1.5,"big":3000000000,"neg":-2,"exp":1000}`},
		{"null, bools, arrays and strings", `{"n":null,"t":true,"a":[1,"x",[]],"s":"2026-01-02T03:04:05Z"}`, `{"n":null,"t":true,"a":[1,"x",[]],"s":"2026-01-02T03:04:05Z"}`},
		{"a repeated key keeps the last value in the first place", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f notify.Fields
			if err := json.Unmarshal([]byte(tt.in), &f); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.out {
				t.Errorf("got %s, want %s", b, tt.out)
			}
		})
	}
}

func TestFieldsNumbersFollowTheNodeSerializer(t *testing.T) {
	var f notify.Fields
	if err := json.Unmarshal([]byte(`{"small":7,"whole":2.0,"big":3000000000,"frac":0.5}`), &f); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"small": int32(7), "whole": int32(2), "big": float64(3e9), "frac": 0.5}
	for k, w := range want {
		if v, _ := f.Get(k); v != w {
			t.Errorf("%s = %#v, want %#v", k, v, w)
		}
	}
}

func TestFieldsRejectsNonObjects(t *testing.T) {
	for _, in := range []string{`[]`, `1`, `"x"`, `{"a":1} {}`, `{"a":`} {
		var f notify.Fields
		if err := json.Unmarshal([]byte(in), &f); err == nil {
			t.Errorf("Unmarshal(%s) accepted", in)
		}
	}
}

func TestRecordJSONNeverShowsInternalKeys(t *testing.T) {
	var n notify.Notification
	in := `{"id":"5f1e2d3c4b5a697887766554","_id":"x","__v":3,"serviceName":"s","message":{"subject":"hi"},"isBroadcast":true,` +
		`"validTill":"2026-01-02T03:04:05Z","createdBy":{"securityId":"me","authnStrategy":"ip","role":"SuperAdmin"},"extra":[1]}`
	if err := json.Unmarshal([]byte(in), &n); err != nil {
		t.Fatal(err)
	}
	n.ApplyDefaults()
	b, _ := json.Marshal(n)
	want := `{"id":"5f1e2d3c4b5a697887766554","serviceName":"s","state":"new","message":{"subject":"hi"},"channel":"inApp",` +
		`"isBroadcast":true,"skipSubscriptionConfirmationCheck":false,"validTill":"2026-01-02T03:04:05.000Z",` +
		`"createdBy":{"securityId":"me","authnStrategy":"ip","role":"SuperAdmin"},"extra":[1]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestClientInputErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name  string
		rec   notify.Record
		in    string
		field string
	}{
		{"serviceName must be a string", &notify.Subscription{}, `{"serviceName":1}`, "serviceName"},
		{"a date-only validTill is refused", &notify.Notification{}, `{"validTill":"2026-01-02"}`, "validTill"},
		{"isBroadcast must be a boolean", &notify.Notification{}, `{"isBroadcast":"yes"}`, "isBroadcast"},
		{"message must be an object", &notify.Notification{}, `{"message":"hi"}`, "message"},
		{"hardBounceCount must be an integer", &notify.Bounce{}, `{"hardBounceCount":1.5}`, "hardBounceCount"},
		{"ttl must be an integer", &notify.AccessToken{}, `{"ttl":"1"}`, "ttl"},
		{"an administrator email must be a string", &notify.Administrator{}, `{"email":["a"]}`, "email"},
		{"a bad id is refused", &notify.Configuration{}, `{"id":"nope"}`, "id"},
		{"createdBy must be a profile", &notify.Configuration{}, `{"createdBy":"me"}`, "createdBy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f notify.Fields
			if err := json.Unmarshal([]byte(tt.in), &f); err != nil {
				t.Fatal(err)
			}
			err := tt.rec.SetFields(f)
			var fe *notify.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("SetFields(%s) = %v, want a FieldError on %s", tt.in, err, tt.field)
			}
		})
	}
}

func TestStoredDataOfUnexpectedTypeIsKept(t *testing.T) {
	// The original's schemaless documents may hold anything: a known field
	// of another type must survive a read and write unchanged.
	stored := notify.Fields{
		{"id", notify.NewID()},
		{"serviceName", int32(42)},
		{"validTill", "not a date"},
		{"readBy", "nobody"},
		{"userChannelId", nil},
	}
	var n notify.Notification
	n.LoadFields(stored)
	got := n.Fields()
	for _, k := range []string{"serviceName", "validTill", "readBy", "userChannelId"} {
		want, _ := stored.Get(k)
		if v, ok := got.Get(k); !ok || v != want {
			t.Errorf("%s = %#v (present %v), want %#v", k, v, ok, want)
		}
	}
}

func TestStrictRecordsDropUnknownFields(t *testing.T) {
	for _, rec := range []notify.Record{&notify.Administrator{}, &notify.UserCredential{}, &notify.AccessToken{}} {
		if err := rec.SetFields(notify.Fields{{"email", "a@b.c"}, {"isAdmin", true}}); err != nil {
			t.Fatal(err)
		}
		if rec.Fields().Has("isAdmin") {
			t.Errorf("%T kept an unknown field", rec)
		}
	}
}

func TestBounceShowsItsDefaults(t *testing.T) {
	b := notify.Bounce{Channel: "email", UserChannelID: "a@b.c"}
	b.ApplyDefaults()
	out, _ := json.Marshal(b)
	want := `{"channel":"email","userChannelId":"a@b.c","hardBounceCount":0,"state":"active","latestNotificationStarted":null}`
	if string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}

func TestDispatchJSONNames(t *testing.T) {
	n := notify.Notification{Dispatch: &notify.Dispatch{
		Candidates: []string{"a", "b", "c"},
		Successful: []string{"a"},
		Failed:     []notify.DispatchFailure{{SubscriptionID: "b", UserChannelID: "b@x", Error: "550"}},
		Skipped:    []string{"c"},
	}}
	out, _ := json.Marshal(n)
	if !strings.Contains(string(out), `"dispatch":{"candidates":["a","b","c"],"successful":["a"],"failed":[{"subscriptionId":"b","userChannelId":"b@x","error":"550"}],"skipped":["c"]}`) {
		t.Errorf("got %s", out)
	}
}

func TestCheckPasswordComplexity(t *testing.T) {
	tests := []struct {
		name string
		pw   string
		ok   bool
	}{
		{"all four classes and ten characters", "Abcdefg1!x", true},
		{"nine characters are too few", "Abcdef1!x", false},
		{"no upper-case letter", "abcdefg1!x", false},
		{"no lower-case letter", "ABCDEFG1!X", false},
		{"no digit", "Abcdefgh!x", false},
		{"no special character of the set", "Abcdefg1%x", false},
		{"a line break is not matched by dot", "Abcdefg1!\nxyz", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notify.CheckPasswordComplexity(tt.pw); got != tt.ok {
				t.Errorf("CheckPasswordComplexity(%q) = %v", tt.pw, got)
			}
		})
	}
}

func TestAccessTokenExpiry(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := int64(60)
	tests := []struct {
		name    string
		tok     notify.AccessToken
		at      time.Time
		expired bool
	}{
		{"no ttl never expires", notify.AccessToken{Created: created}, created.AddDate(10, 0, 0), false},
		{"within ttl is valid", notify.AccessToken{Created: created, TTL: &ttl}, created.Add(59 * time.Second), false},
		{"after ttl is expired", notify.AccessToken{Created: created, TTL: &ttl}, created.Add(61 * time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tok.Expired(tt.at); got != tt.expired {
				t.Errorf("Expired = %v", got)
			}
		})
	}
}

func TestEmailKeyFoldsCase(t *testing.T) {
	if notify.EmailKey("Admin@Example.ORG") != notify.EmailKey("admin@example.org") {
		t.Error("case not folded")
	}
}

func TestPlainValuesForFilterEvaluation(t *testing.T) {
	id := notify.NewID()
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := notify.NewFields("n", int32(2), "id", id, "when", when, "nested", notify.NewFields("list", []any{int64(1), "x"}))
	got := f.Map()
	if got["n"] != float64(2) || got["id"] != id.Hex() || got["when"] != "2026-01-02T03:04:05.000Z" {
		t.Errorf("scalars %v", got)
	}
	nested, ok := got["nested"].(map[string]any)
	if !ok || nested["list"].([]any)[0] != float64(1) {
		t.Errorf("nested %v", got["nested"])
	}
	back, err := notify.FromPlain(map[string]any{"b": 1.0, "a": []any{"x", 2.5}})
	if err != nil {
		t.Fatal(err)
	}
	doc := back.(notify.Fields)
	if !slices.Equal(doc.Keys(), []string{"a", "b"}) {
		t.Errorf("keys %v, want sorted", doc.Keys())
	}
	if v, _ := doc.Get("b"); v != int32(1) {
		t.Errorf("b = %#v", v)
	}
}

func TestFieldsEditing(t *testing.T) {
	f := notify.NewFields("a", 1, "b", notify.NewFields("c", 2))
	clone := f.Clone()
	f.Set("a", 9)
	f.Set("z", true)
	if !f.Delete("b") || f.Delete("missing") {
		t.Error("Delete reports presence wrongly")
	}
	if !slices.Equal(f.Keys(), []string{"a", "z"}) {
		t.Errorf("keys %v", f.Keys())
	}
	if v, _ := clone.Get("a"); v != 1 || !clone.Has("b") {
		t.Errorf("clone changed: %v", clone)
	}
	if s, ok := notify.NewFields("s", "x").String("s"); !ok || s != "x" {
		t.Error("String")
	}
	if b, ok := notify.NewFields("b", true).Bool("b"); !ok || !b {
		t.Error("Bool")
	}
}
