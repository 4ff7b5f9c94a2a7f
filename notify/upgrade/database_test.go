package upgrade

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify/embeddedmongo"
)

// startStore starts the embedded document store (FerretDB on SQLite) and
// returns a URI naming a database of its own, and a client to seed it.
func startStore(t *testing.T) (string, *mongo.Database) {
	t.Helper()
	ctx := context.Background()
	srv, err := embeddedmongo.Start(ctx, embeddedmongo.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Stop(ctx)
	})
	uri := strings.TrimSuffix(srv.URI(), "/") + "/notifyBC"
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Disconnect(context.Background()) })
	return uri, client.Database("notifyBC")
}

// v2 → v3 renames the stored dispatch fields of notifications, leaves
// every other field alone, does nothing on a dry run and nothing the
// second time.
func TestV2ToV3RenamesStoredDispatchFields(t *testing.T) {
	uri, db := startStore(t)
	ctx := context.Background()
	coll := db.Collection("notification")
	_, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "serviceName", Value: "a"}, {Key: "failedDispatches", Value: bson.A{bson.D{{Key: "subscriptionId", Value: "s1"}, {Key: "error", Value: "550"}}}}, {Key: "successDispatches", Value: bson.A{"s2", "s3"}}},
		bson.D{{Key: "serviceName", Value: "b"}, {Key: "successDispatches", Value: bson.A{"s4"}}},
		bson.D{{Key: "serviceName", Value: "c"}, {Key: "dispatch", Value: bson.D{{Key: "successful", Value: bson.A{"s5"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string]bson.M {
		cur, err := coll.Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		out := map[string]bson.M{}
		for _, d := range docs {
			delete(d, "_id")
			out[d["serviceName"].(string)] = d
		}
		return out
	}
	before := snapshot()

	dir := copyTree(t, "testdata/steps/v2-js/before")
	code, out, errOut := runMain(t, nil, "--dir", dir, "--from", "2", "--to", "3", "--database", uri, "--dry-run")
	if code != ExitOK || !strings.Contains(out, "2 would have failedDispatches") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	if got := snapshot(); !equalJSON(got, before) {
		t.Fatalf("a dry run changed the data: %v", got)
	}

	code, out, errOut = runMain(t, nil, "--dir", dir, "--from", "2", "--to", "3", "--database", uri)
	if code != ExitOK || !strings.Contains(out, "in 2 document(s)") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	got := snapshot()
	want := map[string]bson.M{
		"a": {"serviceName": "a", "dispatch": bson.M{"failed": bson.A{bson.M{"subscriptionId": "s1", "error": "550"}}, "successful": bson.A{"s2", "s3"}}},
		"b": {"serviceName": "b", "dispatch": bson.M{"successful": bson.A{"s4"}}},
		"c": before["c"],
	}
	if !equalJSON(got, want) {
		t.Errorf("after the step:\n got %v\nwant %v", got, want)
	}
	if strings.Contains(out, "Rename the stored fields") {
		t.Errorf("the checklist asks for the rename the tool did:\n%s", out)
	}

	code, out, _ = runMain(t, nil, "--dir", dir, "--from", "2", "--to", "3", "--database", uri)
	if code != ExitOK || !strings.Contains(out, "nothing to rename") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}
}

func equalJSON(a, b any) bool {
	x, _ := bson.MarshalExtJSON(bson.M{"v": a}, false, false)
	y, _ := bson.MarshalExtJSON(bson.M{"v": b}, false, false)
	return canonical(x) == canonical(y)
}

// canonical sorts keys so documents compare regardless of field order.
func canonical(b []byte) string {
	var v any
	if err := bson.UnmarshalExtJSON(b, false, &v); err != nil {
		return string(b)
	}
	return sortedString(v)
}

func sortedString(v any) string {
	switch v := v.(type) {
	case bson.D:
		m := bson.M{}
		for _, e := range v {
			m[e.Key] = e.Value
		}
		return sortedString(m)
	case bson.M:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sortStrings(keys)
		var b strings.Builder
		b.WriteString("{")
		for _, k := range keys {
			b.WriteString(k + ":" + sortedString(v[k]) + ",")
		}
		return b.String() + "}"
	case bson.A:
		var b strings.Builder
		b.WriteString("[")
		for _, x := range v {
			b.WriteString(sortedString(x) + ",")
		}
		return b.String() + "]"
	}
	return strings.TrimSpace(strings.ReplaceAll(bsonString(v), "\n", ""))
}

func bsonString(v any) string {
	b, _ := bson.MarshalExtJSON(bson.M{"x": v}, false, false)
	return string(b)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// v4 → v5 reports administrators whose emails differ only by case, exits
// 1 while any do, and says so in the checklist.
func TestV4ToV5ReportsEmailsThatDifferOnlyByCase(t *testing.T) {
	uri, db := startStore(t)
	ctx := context.Background()
	admins := db.Collection("administrator")
	if _, err := admins.InsertMany(ctx, []any{
		bson.D{{Key: "email", Value: "Pat.Lee@example.gov"}},
		bson.D{{Key: "email", Value: "pat.lee@EXAMPLE.gov"}},
		bson.D{{Key: "email", Value: "sam@example.gov"}},
	}); err != nil {
		t.Fatal(err)
	}
	dir := copyTree(t, "testdata/steps/v4-json/before")
	code, out, errOut := runMain(t, nil, "--dir", dir, "--from", "4", "--to", "5", "--database", uri)
	if code != ExitProblems {
		t.Errorf("exit %d, want %d\n%s%s", code, ExitProblems, out, errOut)
	}
	for _, w := range []string{"1 email(s) are used more than once", "Pat.Lee@example.gov (id ", "pat.lee@EXAMPLE.gov (id ", "Change or remove one of each of:", "not a replica set member"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "sam@example.gov") {
		t.Errorf("a unique email is reported:\n%s", out)
	}

	if _, err := admins.DeleteOne(ctx, bson.D{{Key: "email", Value: "pat.lee@EXAMPLE.gov"}}); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runMain(t, nil, "--dir", dir, "--from", "4", "--to", "5", "--database", uri)
	if code != ExitOK || !strings.Contains(out, "no emails that differ only by case") || !strings.Contains(out, "checked, none collide") {
		t.Errorf("exit %d after the fix:\n%s", code, out)
	}
}

// v5 → v6 reads the feature compatibility version the server reports
// (the embedded store reports 7.0) and judges it.
func TestV5ToV6ChecksTheFeatureCompatibilityVersion(t *testing.T) {
	uri, _ := startStore(t)
	dir := copyTree(t, "testdata/steps/v5-js/before")
	code, out, errOut := runMain(t, map[string]string{"NOTIFYBC_NODE_ROLE": "primary"}, "--dir", dir, "--from", "5", "--to", "6", "--database", uri, "--dry-run")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, w := range []string{"feature compatibility version 7.0: ready for MongoDB 8", "(checked)", `NOTIFYBC_NODE_ROLE is "primary": remove the variable`} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestFeatureCompatibilityVerdicts(t *testing.T) {
	tests := []struct {
		name, server, fcv string
		ok                bool
	}{
		{"MongoDB 7 at 7.0 is ready", "7.0.4", "7.0", true},
		{"MongoDB 7 still at 6.0 must be raised first", "7.0.4", "6.0", false},
		{"MongoDB 6 must go to 7 first", "6.0.12", "6.0", false},
		{"MongoDB 8 is already there", "8.0.4", "7.0", true},
		{"an unknown server at 7.0 is ready", "", "7.0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, ok := fcvVerdict(tt.server, tt.fcv)
			if ok != tt.ok {
				t.Errorf("fcvVerdict(%q, %q) = %q, %v; want ok %v", tt.server, tt.fcv, msg, ok, tt.ok)
			}
		})
	}
}

// startOldServer answers the MongoDB handshake as a MongoDB 4.0 server
// (wire version 7) would, in the real wire format: a server older than the
// driver supports, which cannot run here otherwise.
func startOldServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reply, _ := bson.Marshal(bson.D{
		{Key: "ismaster", Value: true}, {Key: "maxWireVersion", Value: int32(7)}, {Key: "minWireVersion", Value: int32(0)},
		{Key: "maxBsonObjectSize", Value: int32(16777216)}, {Key: "maxMessageSizeBytes", Value: int32(48000000)},
		{Key: "maxWriteBatchSize", Value: int32(100000)}, {Key: "ok", Value: 1.0},
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				for {
					hdr := make([]byte, 16)
					if _, err := io.ReadFull(c, hdr); err != nil {
						return
					}
					size := int(binary.LittleEndian.Uint32(hdr))
					body := make([]byte, size-16)
					if _, err := io.ReadFull(c, body); err != nil {
						return
					}
					reqID := binary.LittleEndian.Uint32(hdr[4:])
					op := binary.LittleEndian.Uint32(hdr[12:])
					var msg []byte
					switch op {
					case 2004: // OP_QUERY → OP_REPLY
						msg = binary.LittleEndian.AppendUint32(msg, 0) // responseFlags
						msg = binary.LittleEndian.AppendUint64(msg, 0) // cursorID
						msg = binary.LittleEndian.AppendUint32(msg, 0) // startingFrom
						msg = binary.LittleEndian.AppendUint32(msg, 1) // numberReturned
						msg = append(msg, reply...)
						op = 1
					case 2013: // OP_MSG → OP_MSG
						msg = binary.LittleEndian.AppendUint32(msg, 0) // flagBits
						msg = append(msg, 0)                           // section kind 0
						msg = append(msg, reply...)
					default:
						return
					}
					out := binary.LittleEndian.AppendUint32(nil, uint32(16+len(msg)))
					out = binary.LittleEndian.AppendUint32(out, reqID+1000)
					out = binary.LittleEndian.AppendUint32(out, reqID)
					out = binary.LittleEndian.AppendUint32(out, op)
					if _, err := c.Write(append(out, msg...)); err != nil {
						return
					}
				}
			}(c)
		}
	}()
	return "mongodb://" + ln.Addr().String() + "/notifyBC"
}

// A server the driver cannot talk to gets the equivalent mongosh commands
// instead, and the file rewrites still happen.
func TestAnOldServerGetsShellCommands(t *testing.T) {
	uri := startOldServer(t)
	tests := []struct {
		fixture string
		from    string
		want    string
	}{
		{"v2-js", "2", "$rename: { failedDispatches: \"dispatch.failed\""},
		{"v4-json", "4", "$toLower: \"$email\""},
		{"v5-json", "5", `setFeatureCompatibilityVersion: "7.0"`},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("testdata/steps", tt.fixture, "before"))
			code, out, errOut := runMain(t, nil, "--dir", dir, "--from", tt.from, "--database", uri)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			for _, w := range []string{"older than the MongoDB driver supports", tt.want} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			diffTrees(t, readTree(t, dir, true), readTree(t, filepath.Join("testdata/steps", tt.fixture, "after"), false))
		})
	}
}
