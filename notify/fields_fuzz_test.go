package notify_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/govkit/govkit/notify"
)

// FuzzFieldsJSON checks that any JSON object a client sends survives being
// read into Fields and written back: the written form reads back to the
// same document, and is valid JSON.
func FuzzFieldsJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1,2.5,"x",null,true],"c":{"d":{}}}`, `{"big":3000000000,"neg":-1e300}`, `{"a":1,"a":2}`, `{"\u00e9":"\ud83d\ude00"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var doc notify.Fields
		if err := json.Unmarshal([]byte(in), &doc); err != nil {
			return
		}
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("marshal %s: %v", in, err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %s from %s", out, in)
		}
		var again notify.Fields
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("re-read %s: %v", out, err)
		}
		out2, _ := json.Marshal(again)
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable: %s then %s", out, out2)
		}
	})
}
