package embeddedmongo

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify/embeddedmongo/sjsontest"
)

// startStore starts FerretDB on a temporary directory and connects to
// it.
func startStore(t testing.TB) (*Server, *mongo.Database) {
	t.Helper()
	ctx := context.Background()
	srv, err := Start(ctx, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Stop(c)
	})
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return srv, client.Database("db")
}

// storeDocs inserts docs one by one into collection coll and returns
// those FerretDB accepted.
func storeDocs(t testing.TB, srv *Server, coll *mongo.Collection, docs []bson.D) []bson.D {
	t.Helper()
	ctx := context.Background()
	var ok []bson.D
	for _, d := range docs {
		if _, err := coll.InsertOne(ctx, d); err == nil {
			ok = append(ok, d)
		}
	}
	if err := srv.IndexIDs(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	return ok
}

// storedTexts is every stored document's text of collection coll, in
// rowid order.
func storedTexts(t testing.TB, srv *Server, coll string) [][]byte {
	t.Helper()
	ctx := context.Background()
	l := srv.Lookup("db")
	t.Cleanup(func() { l.Close() })
	db, err := l.conn()
	if err != nil {
		t.Fatal(err)
	}
	table, err := l.table(ctx, db, coll, true)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT _ferretdb_sjson FROM %q ORDER BY rowid`, table))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDecodeStoredIsWhatFerretDBSends: for every document FerretDB
// stores — each BSON type it supports, nested documents and arrays of
// mixed types, odd keys, empty documents and arrays, extreme numbers,
// and thousands of random ones — the decoded stored text is byte for
// byte the document FerretDB returns over the wire; a stored text
// FerretDB itself cannot read back is refused, never decoded.
func TestDecodeStoredIsWhatFerretDBSends(t *testing.T) {
	docs := sjsontest.FixedDocs()
	rng := rand.New(rand.NewPCG(17, 2026))
	for i := 0; i < 3000; i++ {
		docs = append(docs, sjsontest.RandomDoc(rng, i))
	}
	srv, db := startStore(t)
	check := func(name string, docs []bson.D) {
		coll := db.Collection(name)
		accepted := storeDocs(t, srv, coll, docs)
		if len(accepted) < len(docs)*9/10 {
			t.Fatalf("FerretDB accepted only %d of %d documents", len(accepted), len(docs))
		}
		texts := storedTexts(t, srv, name)
		if len(texts) != len(accepted) {
			t.Fatalf("%d stored documents, %d accepted", len(texts), len(accepted))
		}
		compareStored(t, coll, accepted, texts)
	}
	check("docs", docs)
	// Top-level keys FerretDB writes into its JSON without escaping them:
	// it cannot read such a document back (and any scan of the
	// collection fails on it), so they get a collection of their own.
	check("oddkeys", []bson.D{
		{{Key: "_id", Value: "quote"}, {Key: `a"b`, Value: 1.0}},
		{{Key: "_id", Value: "backslash"}, {Key: `a\b`, Value: 1.0}},
		{{Key: "_id", Value: "escape"}, {Key: `a\u0062`, Value: 1.0}, {Key: "ab", Value: 2.0}},
		{{Key: "_id", Value: "escape2"}, {Key: `a\u0062`, Value: 1.0}},
		{{Key: "_id", Value: "tab"}, {Key: "a\tb", Value: 1.0}},
		{{Key: "_id", Value: "control"}, {Key: "a\x01b", Value: 1.0}},
		{{Key: "_id", Value: "fine"}, {Key: "a/b", Value: 1.0}},
	})
}

// compareStored checks each stored text against the document FerretDB
// sends for it.
func compareStored(t *testing.T, coll *mongo.Collection, accepted []bson.D, texts [][]byte) {
	t.Helper()
	ctx := context.Background()
	// What FerretDB sends, by _id: from one read of the collection (a
	// lookup by an _id that is not a string or ObjectId reads it whole);
	// by _id one at a time when that read fails on a document FerretDB
	// cannot read back.
	sent := map[string]bson.Raw{}
	if cur, err := coll.Find(ctx, bson.D{}); err == nil {
		for cur.Next(ctx) {
			sent[string(cur.Current.Lookup("_id").Value)] = bytes.Clone(cur.Current)
		}
		if cur.Err() != nil {
			clear(sent)
		}
		cur.Close(ctx)
	}
	for i, text := range texts {
		got, err := decodeSJSON(nil, text)
		id := accepted[i][0].Value
		_, idBytes, merr := bson.MarshalValue(id)
		if merr != nil {
			t.Fatal(merr)
		}
		want, ok := sent[string(idBytes)]
		var werr error
		if !ok {
			want, werr = coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
		}
		if werr != nil {
			if err == nil {
				t.Fatalf("document %v: FerretDB cannot read it back (%v), the decoder did: %s", id, werr, text)
			}
			continue
		}
		if err != nil {
			t.Fatalf("document %v: %v\nstored: %s", id, err, text)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("document %v:\n got %v\nwant %v\nstored: %s", id, bson.Raw(got), want, text)
		}
	}
}

// TestDecodeStoredRefusesWhatItDoesNotKnow: a stored text that breaks
// FerretDB's format, or a type this decoder does not know, is refused
// (the caller then asks FerretDB), never guessed at.
func TestDecodeStoredRefusesWhatItDoesNotKnow(t *testing.T) {
	for name, text := range map[string]string{
		"unknown type":         `{"$s":{"p":{"_id":{"t":"string"},"x":{"t":"decimal"}},"$k":["_id","x"]},"_id":"a","x":"1"}`,
		"unknown schema field": `{"$s":{"p":{"_id":{"t":"string","z":1}},"$k":["_id"]},"_id":"a"}`,
		"missing schema":       `{"_id":"a"}`,
		"more fields than $k":  `{"$s":{"p":{"_id":{"t":"string"}},"$k":["_id"]},"_id":"a","y":1}`,
		"key not present":      `{"$s":{"p":{"_id":{"t":"string"}},"$k":["_idx"]},"_id":"a"}`,
		"no elem":              `{"$s":{"p":{},"$k":["_id"]},"_id":"a"}`,
		"int out of range":     `{"$s":{"p":{"_id":{"t":"int"}},"$k":["_id"]},"_id":2147483648}`,
		"int with fraction":    `{"$s":{"p":{"_id":{"t":"long"}},"$k":["_id"]},"_id":1.5}`,
		"short objectId":       `{"$s":{"p":{"_id":{"t":"objectId"}},"$k":["_id"]},"_id":"0102"}`,
		"bad base64":           `{"$s":{"p":{"_id":{"t":"binData","s":0}},"$k":["_id"]},"_id":"%%%"}`,
		"binData no subtype":   `{"$s":{"p":{"_id":{"t":"binData"}},"$k":["_id"]},"_id":""}`,
		"regex no options":     `{"$s":{"p":{"_id":{"t":"regex"}},"$k":["_id"]},"_id":"x"}`,
		"array length":         `{"$s":{"p":{"_id":{"t":"array","i":[{"t":"int"}]}},"$k":["_id"]},"_id":[1,2]}`,
		"null type, value":     `{"$s":{"p":{"_id":{"t":"null"}},"$k":["_id"]},"_id":1}`,
		"trailing text":        `{"$s":{"p":{"_id":{"t":"string"}},"$k":["_id"]},"_id":"a"} x`,
		"bad json":             `{"$s":{"p":{"_id":{"t":"string"}},"$k":["_id"]},"_id":"a"`,
		"nul in key":           `{"$s":{"p":{"_id":{"t":"string"},"a\u0000":{"t":"int"}},"$k":["_id","a\u0000"]},"_id":"a","a\u0000":1}`,
		"double as string":     `{"$s":{"p":{"_id":{"t":"double"}},"$k":["_id"]},"_id":"1"}`,
	} {
		if got, err := decodeSJSON(nil, []byte(text)); !errors.Is(err, errSJSON) {
			t.Errorf("%s: decoded as %v, %v", name, bson.Raw(got), err)
		}
	}
}

// BenchmarkDecodeStored decodes a stored subscription-like document (the
// shape of the notification service's largest collection).
func BenchmarkDecodeStored(b *testing.B) {
	doc := bson.D{
		{Key: "_id", Value: bson.NewObjectID()},
		{Key: "serviceName", Value: "myService"},
		{Key: "channel", Value: "email"},
		{Key: "userChannelId", Value: "someone.with.a.long.name@example.gov.bc.ca"},
		{Key: "state", Value: "confirmed"},
		{Key: "confirmationRequest", Value: bson.D{
			{Key: "confirmationCodeRegex", Value: `\d{5}`}, {Key: "sendRequest", Value: true},
			{Key: "from", Value: "no_reply@example.com"}, {Key: "subject", Value: "Subscription confirmation"},
			{Key: "textBody", Value: "Enter {confirmation_code} on screen"}, {Key: "confirmationCode", Value: "12345"},
		}},
		{Key: "broadcastPushNotificationFilter", Value: "contains_ci(title,'bc')"},
		{Key: "data", Value: bson.D{{Key: "province", Value: "BC"}, {Key: "tags", Value: bson.A{"a", "b", "c"}}}},
		{Key: "unsubscriptionCode", Value: "54321"},
		{Key: "created", Value: bson.DateTime(1700000000000)},
		{Key: "updated", Value: bson.DateTime(1700000001000)},
		{Key: "createdBy", Value: bson.D{{Key: "ip", Value: "127.0.0.1"}, {Key: "eventSrc", Value: "api"}}},
	}
	srv, db := startStore(b)
	storeDocs(b, srv, db.Collection("docs"), []bson.D{doc})
	text := storedTexts(b, srv, "docs")[0]
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		var err error
		if dst, err = decodeSJSON(dst[:0], text); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFindDocsReadsThePageInBulk: FindDocs gives the documents of a
// query — a page, or every match without a limit — in its order, each
// the bytes FerretDB sends for it; a document whose stored text it does
// not decode (here one FerretDB reads, an elem's member spelt "T",
// which Go's JSON decoder matches to "t") comes as its _id alone, for
// the caller to read through FerretDB.
func TestFindDocsReadsThePageInBulk(t *testing.T) {
	ctx := context.Background()
	srv, db := startStore(t)
	coll := db.Collection("docs")
	var docs []bson.D
	for i := 0; i < 700; i++ {
		docs = append(docs, bson.D{
			{Key: "_id", Value: fmt.Sprintf("d%03d", i)}, {Key: "state", Value: []string{"a", "b"}[i%2]},
			{Key: "created", Value: bson.DateTime(1700000000000 + int64(i*7919%700)*1000)},
			{Key: "n", Value: int32(i)}, {Key: "tags", Value: bson.A{"x", int64(i), bson.D{{Key: "k", Value: nil}}}},
		})
	}
	if got := storeDocs(t, srv, coll, docs); len(got) != len(docs) {
		t.Fatalf("%d of %d stored", len(got), len(docs))
	}
	l := srv.Lookup("db")
	defer l.Close()
	kinds := []Field{{Name: "state", Kind: KindString}, {Name: "created", Kind: KindDate}}
	if err := l.IndexFields(ctx, "docs", kinds, []string{"state"}, [][]string{{"created", "state"}}); err != nil {
		t.Fatal(err)
	}
	w, err := sql.Open("sqlite", l.sqlURL(false))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	table, err := l.table(ctx, w, "docs", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, fmt.Sprintf(`UPDATE %q SET _ferretdb_sjson = replace(_ferretdb_sjson, '"n":{"t":', '"n":{"T":') WHERE _ferretdb_sjson->>'$._id' = 'd010'`, table)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		skip, limit int64
	}{{"every match", 0, 0}, {"a page", 20, 25}, {"past the end", 340, 100}} {
		q := Query{Coll: "docs", Fields: kinds, Conds: []Cond{{Field: "state", Op: OpEq, Values: []any{"a"}}},
			Order: []Order{{Field: "created", Desc: true}}, Skip: tc.skip, Limit: tc.limit, Composites: [][]string{{"created", "state"}}}
		var got []bson.Raw
		fallbacks := 0
		err := l.FindDocs(ctx, q, func(id any, raw bson.Raw) error {
			if raw == nil {
				fallbacks++
				r, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
				if err != nil {
					return err
				}
				raw = r
			}
			got = append(got, raw)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		opts := options.Find().SetSort(bson.D{{Key: "created", Value: -1}}).SetSkip(tc.skip)
		if tc.limit > 0 {
			opts.SetLimit(tc.limit)
		}
		cur, err := coll.Find(ctx, bson.D{{Key: "state", Value: "a"}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		var want []bson.Raw
		for cur.Next(ctx) {
			want = append(want, bytes.Clone(cur.Current))
		}
		cur.Close(ctx)
		if len(got) != len(want) {
			t.Fatalf("%s: %d documents, FerretDB %d", tc.name, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: document %d:\n got %v\nwant %v", tc.name, i, got[i], want[i])
			}
		}
		if tc.name == "every match" && fallbacks != 1 {
			t.Errorf("%s: %d documents read through FerretDB, want the 1 not decoded", tc.name, fallbacks)
		}
	}
}

// FuzzDecodeStored: whatever the stored text, the decoder returns an
// error or a valid BSON document, and decodes only valid JSON.
func FuzzDecodeStored(f *testing.F) {
	for _, s := range []string{
		`{"$s":{"p":{"_id":{"t":"objectId"},"a":{"t":"array","i":[{"t":"int"},{"t":"string"},{"t":"object","$s":{"p":{"x":{"t":"double"}},"$k":["x"]}}]}},"$k":["_id","a"]},"_id":"0102030405060708090a0b0c","a":[1,"two",{"x":-1.5e-7}]}`,
		`{"$s":{"p":{"_id":{"t":"string"},"b":{"t":"binData","s":128},"r":{"t":"regex","o":"i"},"d":{"t":"date"},"ts":{"t":"timestamp"},"l":{"t":"long"},"n":{"t":"null"},"e":{"t":"object","$s":{}}},"$k":["_id","b","r","d","ts","l","n","e"]},"_id":"k\u00e9y\"","b":"AAEC","r":"^a","d":-1,"ts":18446744073709551615,"l":-9223372036854775808,"n":null,"e":{}}`,
		`{"$s":{"p":{"_id":{"t":"bool"}},"$k":["_id"]},"_id":true}`,
		`{"$s":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		out, err := decodeSJSON(nil, text)
		if err != nil {
			return
		}
		if !json.Valid(text) {
			t.Fatalf("decoded text that is not JSON: %q", text)
		}
		if err := bson.Raw(out).Validate(); err != nil {
			t.Fatalf("decoded %q into invalid BSON: %v", text, err)
		}
	})
}
