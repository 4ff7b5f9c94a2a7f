package mongostore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// indexedStore opens a store on the shared embedded store with the field
// index of its database, prepared as the primary prepares it at start.
func indexedStore(t *testing.T) *mongostore.Store {
	t.Helper()
	ctx := context.Background()
	s := openStore(t, embeddedURI, nil)
	l := embedded.Lookup(s.Database())
	t.Cleanup(func() { _ = l.Close() })
	s.SetFieldIndex(l)
	if _, err := s.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := embedded.IndexIDs(ctx, s.Database()); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// plainStore opens a second store on the same database without the field
// index: every query is FerretDB's scan.
func plainStore(t *testing.T, db string) *mongostore.Store {
	t.Helper()
	s, err := mongostore.Open(context.Background(), embeddedURI, mongostore.Options{Database: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func rawSubscriptions(t *testing.T, db string) *mongo.Collection {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(embeddedURI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c.Database(db).Collection(notify.CollSubscription)
}

// oddSubscriptions are stored documents with every shape of userId and
// userChannelId the lookups must get right: arrays (an element matches),
// other types, missing and null, case variants, the two non-ASCII letters
// Go's regexp folds onto ASCII, and look-alikes that must not match.
func oddSubscriptions() []any {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	docs := []any{}
	add := func(userID any, address any, service, state string, created time.Time) {
		d := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "serviceName", Value: service}, {Key: "channel", Value: "email"}, {Key: "state", Value: state}, {Key: "created", Value: created}}
		if userID != "<missing>" {
			d = append(d, bson.E{Key: "userId", Value: userID})
		}
		if address != "<missing>" {
			d = append(d, bson.E{Key: "userChannelId", Value: address})
		}
		docs = append(docs, d)
	}
	for i := range 30 {
		// many ties on created and serviceName, for the sort
		add("alice", fmt.Sprintf("a%d@example.org", i), fmt.Sprintf("svc%d", i%3), []string{"confirmed", "unconfirmed", "deleted"}[i%3], t0.Add(time.Duration(i%4)*time.Hour))
	}
	add(bson.A{"alice", "bob"}, "shared@example.org", "svc1", "confirmed", t0)
	add(bson.A{bson.D{{Key: "id", Value: "alice"}}}, "nested@example.org", "svc1", "confirmed", t0)
	add("Alice", "case@example.org", "svc1", "confirmed", t0)
	add("alice ", "space@example.org", "svc1", "confirmed", t0)
	add(bson.NewObjectID(), "oid@example.org", "svc1", "confirmed", t0)
	add(int32(7), "num@example.org", "svc1", "confirmed", t0)
	add(nil, "null@example.org", "svc1", "confirmed", t0)
	add("<missing>", "missing@example.org", "svc1", "confirmed", t0)
	add(bson.D{{Key: "id", Value: "alice"}}, "doc@example.org", "svc1", "confirmed", t0)
	add("carol", "Kate@Example.org", "svc1", "confirmed", t0)
	add("carol", "KATE@EXAMPLE.ORG", "svc1", "confirmed", t0.Add(time.Hour))
	add("carol", "\u212aate@example.org", "svc1", "confirmed", t0) // KELVIN SIGN
	add("carol", "kate@example.or\u0261", "svc1", "confirmed", t0) // not an ASCII g
	add("carol", "kate@examp\u017fe.org", "svc1", "confirmed", t0) // LONG S for l: no
	add("carol", "kate@example.org.evil", "svc1", "confirmed", t0) // longer
	add("carol", bson.A{"x@y.z", "kate@example.org"}, "svc2", "confirmed", t0)
	add("carol", "sam@example.org", "svc1", "confirmed", t0)
	add("carol", "\u017fam@example.org", "svc1", "confirmed", t0) // LONG S
	add("carol", "<missing>", "svc1", "confirmed", t0)
	return docs
}

// TestLookupAnswersAsTheScan: every query the field index answers gives
// what FerretDB's own scan gives: the same records in the same order, the
// same counts, the same updates.
func TestLookupAnswersAsTheScan(t *testing.T) {
	ctx := context.Background()
	clock := func() time.Time { return time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC) }
	// Two databases with the same documents: updates run through the index
	// on one and through the scan on the other.
	fast := indexedStore(t)
	slowDB := indexedStore(t)
	docs := oddSubscriptions()
	for _, s := range []*mongostore.Store{fast, slowDB} {
		if _, err := rawSubscriptions(t, s.Database()).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	slow, err := mongostore.Open(ctx, embeddedURI, mongostore.Options{Database: slowDB.Database(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close(ctx)
	fast2, err := mongostore.Open(ctx, embeddedURI, mongostore.Options{Database: fast.Database(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer fast2.Close(ctx)
	l := embedded.Lookup(fast.Database())
	defer l.Close()
	fast2.SetFieldIndex(l)
	scan := plainStore(t, fast.Database())

	notDeleted := bson.D{{Key: "state", Value: bson.D{{Key: "$ne", Value: "deleted"}}}}
	kate := bson.D{{Key: "$regex", Value: "^kate@example\\.org$"}, {Key: "$options", Value: "i"}}
	sam := bson.D{{Key: "$regex", Value: "^SAM@example\\.org$"}, {Key: "$options", Value: "i"}}
	queries := []mongostore.Query{
		{Filter: bson.D{{Key: "userId", Value: "alice"}}},
		{Filter: bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "serviceName", Value: "svc1"}}, bson.D{{Key: "userId", Value: "alice"}, notDeleted[0]}}}}},
		{Filter: bson.D{{Key: "userId", Value: "alice"}}, Sort: bson.D{{Key: "created", Value: -1}}},
		{Filter: bson.D{{Key: "userId", Value: "alice"}}, Sort: bson.D{{Key: "serviceName", Value: 1}, {Key: "created", Value: -1}}, Skip: 2, Limit: 7},
		{Filter: bson.D{{Key: "userId", Value: "alice"}}, Sort: bson.D{{Key: "serviceName", Value: "desc"}}, Projection: bson.D{{Key: "userChannelId", Value: 1}, {Key: "serviceName", Value: 1}}},
		{Filter: bson.D{{Key: "userId", Value: "alice"}, notDeleted[0]}, Projection: bson.D{{Key: "unsubscriptionCode", Value: 0}, {Key: "createdBy", Value: 0}}},
		{Filter: bson.D{{Key: "userId", Value: "alice"}, {Key: "$or", Value: bson.A{bson.D{{Key: "serviceName", Value: "svc0"}}, bson.D{{Key: "state", Value: "deleted"}}}}}},
		{Filter: bson.D{{Key: "userId", Value: "alice"}}, Sort: bson.D{{Key: "userId", Value: 1}}}, // arrays among the sort values: the scan sorts
		{Filter: bson.D{{Key: "userId", Value: "Alice"}}},
		{Filter: bson.D{{Key: "userId", Value: "nobody"}}},
		{Filter: bson.D{{Key: "userChannelId", Value: kate}}},
		{Filter: bson.D{{Key: "userChannelId", Value: sam}, {Key: "state", Value: "confirmed"}}},
		{Filter: bson.D{{Key: "userChannelId", Value: "kate@example.org"}, {Key: "channel", Value: "email"}}},
		{Filter: bson.D{{Key: "userChannelId", Value: "Kate@Example.org"}}},
		{Filter: bson.D{{Key: "userChannelId", Value: bson.D{{Key: "$regex", Value: "^kate@example\\.org$"}}}}},
		{Filter: bson.D{{Key: "userChannelId", Value: bson.D{{Key: "$regex", Value: "^kate@example.org$"}, {Key: "$options", Value: "i"}}}}}, // not quoted: the scan
	}
	before := mongostore.LookupsAnswered()
	for i, q := range queries {
		want, err := scan.Subscriptions().Find(ctx, q)
		if err != nil {
			t.Fatalf("query %d: scan: %v", i, err)
		}
		got, err := fast.Subscriptions().Find(ctx, q)
		if err != nil {
			t.Fatalf("query %d: lookup: %v", i, err)
		}
		if !reflect.DeepEqual(ids(got), ids(want)) || !reflect.DeepEqual(fieldsOf(got), fieldsOf(want)) {
			t.Errorf("query %d %v: lookup found %v, the scan %v", i, q, ids(got), ids(want))
		}
		wn, err := scan.Subscriptions().Count(ctx, q.Filter)
		if err != nil {
			t.Fatal(err)
		}
		gn, err := fast.Subscriptions().Count(ctx, q.Filter)
		if err != nil {
			t.Fatal(err)
		}
		if gn != wn {
			t.Errorf("query %d: lookup counts %d, the scan %d", i, gn, wn)
		}
	}
	if mongostore.LookupsAnswered()-before < int64(len(queries)) {
		t.Errorf("the field index answered %d of %d queries", mongostore.LookupsAnswered()-before, 2*len(queries))
	}
	// The same updates on both copies leave the same documents.
	set := func(v string) bson.D { return bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: v}}}} }
	for i, u := range []struct{ filter, update bson.D }{
		{bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "serviceName", Value: "svc1"}, {Key: "state", Value: "confirmed"}, {Key: "userChannelId", Value: kate}}, bson.D{{Key: "userId", Value: bson.D{{Key: "$ne", Value: "nobody"}}}}}}}, set("deleted")},
		{bson.D{{Key: "userId", Value: "alice"}, {Key: "serviceName", Value: "svc2"}}, set("confirmed")},
	} {
		wn, err := slow.Subscriptions().UpdateMany(ctx, u.filter, u.update)
		if err != nil {
			t.Fatal(err)
		}
		before := mongostore.LookupsAnswered()
		gn, err := fast2.Subscriptions().UpdateMany(ctx, u.filter, u.update)
		if err != nil {
			t.Fatal(err)
		}
		if mongostore.LookupsAnswered() == before {
			t.Errorf("update %d was not answered from the field index", i)
		}
		if gn != wn || gn == 0 {
			t.Errorf("update %d: lookup modified %d, the scan %d", i, gn, wn)
		}
	}
	all := func(s *mongostore.Store) []notify.Fields {
		recs, err := plainStore(t, s.Database()).Subscriptions().Find(ctx, mongostore.Query{})
		if err != nil {
			t.Fatal(err)
		}
		return fieldsOf(recs)
	}
	if got, want := all(fast), all(slowDB); !reflect.DeepEqual(got, want) {
		t.Errorf("after the updates the documents differ:\nlookup %v\nscan   %v", got, want)
	}
}

func ids(recs []*notify.Subscription) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r.ID.Hex())
	}
	return out
}

func fieldsOf(recs []*notify.Subscription) []notify.Fields {
	out := []notify.Fields{}
	for _, r := range recs {
		out = append(out, r.Fields())
	}
	return out
}

// TestLookupUnderConcurrentWrites: while users create and delete their
// subscriptions, a user's list read through the field index always holds
// every subscription of that user that existed before the read began and
// still exists after it, and nothing of anyone else; afterwards every list
// equals the scan's. Nothing is written besides the documents themselves,
// so there is no second record to lose an update.
func TestLookupUnderConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	s := indexedStore(t)
	scan := plainStore(t, s.Database())
	const users, perUser = 8, 25
	var mu sync.Mutex
	created := map[string]map[string]bool{} // user -> ids acknowledged
	deleted := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	before := mongostore.LookupsAnswered()
	for u := range users {
		user := fmt.Sprintf("user%d", u)
		mu.Lock()
		created[user] = map[string]bool{}
		mu.Unlock()
		wg.Add(2)
		go func() { // writer: creates, and deletes every fifth
			defer wg.Done()
			for i := range perUser {
				sub := &notify.Subscription{ServiceName: "svc", UserChannelID: fmt.Sprintf("%s-%d@example.org", user, i), UserID: user}
				if err := s.Subscriptions().Insert(ctx, sub); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				created[user][sub.ID.Hex()] = true
				mu.Unlock()
				if i%5 == 4 {
					if _, err := s.Subscriptions().UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{sub.ID}}}}}, bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: notify.StateDeleted}}}}); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					deleted[sub.ID.Hex()] = true
					mu.Unlock()
				}
			}
		}()
		go func() { // reader
			defer wg.Done()
			for range perUser {
				mu.Lock()
				var must []string
				for id := range created[user] {
					if !deleted[id] {
						must = append(must, id)
					}
				}
				mu.Unlock()
				got, err := s.Subscriptions().Find(ctx, mongostore.Query{Filter: bson.D{{Key: "userId", Value: user}, {Key: "state", Value: bson.D{{Key: "$ne", Value: notify.StateDeleted}}}}})
				if err != nil {
					errs <- err
					return
				}
				seen := map[string]bool{}
				for _, r := range got {
					if r.UserID != user {
						errs <- fmt.Errorf("%s's list has %s of %s", user, r.ID.Hex(), r.UserID)
					}
					seen[r.ID.Hex()] = true
				}
				mu.Lock()
				for _, id := range must {
					// deleted during the read: it may be there or not
					if !seen[id] && !deleted[id] {
						errs <- fmt.Errorf("%s's list misses %s", user, id)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := mongostore.LookupsAnswered() - before; n < users*perUser {
		t.Errorf("the field index answered %d reads and deletions, want at least %d", n, users*perUser)
	}
	for u := range users {
		q := mongostore.Query{Filter: bson.D{{Key: "userId", Value: fmt.Sprintf("user%d", u)}, {Key: "state", Value: bson.D{{Key: "$ne", Value: notify.StateDeleted}}}}}
		got, err := s.Subscriptions().Find(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := scan.Subscriptions().Find(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ids(got), ids(want)) || len(got) != perUser-perUser/5 {
			t.Errorf("user%d: lookup %d records %v, scan %d records %v", u, len(got), ids(got), len(want), ids(want))
		}
	}
}

// TestLookupAnswersAsTheScanRandomly compares the two paths on many
// generated queries: a user or an address with random further
// conditions, sorts, skips, limits and projections (fixed seed, so a
// failure repeats).
func TestLookupAnswersAsTheScanRandomly(t *testing.T) {
	ctx := context.Background()
	fast := indexedStore(t)
	docs := oddSubscriptions()
	for i := range 60 {
		d := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "serviceName", Value: fmt.Sprintf("svc%d", i%4)},
			{Key: "channel", Value: []string{"email", "sms"}[i%2]}, {Key: "state", Value: []string{"confirmed", "unconfirmed", "deleted"}[i%3]},
			{Key: "userId", Value: []string{"alice", "bob", "carol"}[i%3]}, {Key: "userChannelId", Value: []string{"kate@example.org", "KATE@example.org", "sam@example.org"}[i%3]},
			{Key: "created", Value: time.Date(2026, 1, 1, 0, 0, i%5, 0, time.UTC)}}
		if i%7 == 0 {
			d = append(d, bson.E{Key: "data", Value: bson.D{{Key: "city", Value: fmt.Sprintf("c%d", i%3)}}})
		}
		docs = append(docs, d)
	}
	if _, err := rawSubscriptions(t, fast.Database()).InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	scan := plainStore(t, fast.Database())
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...any) any { return xs[rng.IntN(len(xs))] }
	extras := []func() bson.E{
		func() bson.E {
			return bson.E{Key: "state", Value: bson.D{{Key: "$ne", Value: pick("deleted", "confirmed")}}}
		},
		func() bson.E {
			return bson.E{Key: "serviceName", Value: bson.D{{Key: "$in", Value: bson.A{pick("svc0", "svc1"), "svc3"}}}}
		},
		func() bson.E {
			return bson.E{Key: "data.city", Value: bson.D{{Key: "$exists", Value: pick(true, false)}}}
		},
		func() bson.E { return bson.E{Key: "channel", Value: pick("email", "sms")} },
		func() bson.E {
			return bson.E{Key: "created", Value: bson.D{{Key: pick("$gt", "$lte").(string), Value: time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC)}}}
		},
		func() bson.E {
			return bson.E{Key: "$or", Value: bson.A{bson.D{{Key: "serviceName", Value: "svc2"}}, bson.D{{Key: "state", Value: "unconfirmed"}}}}
		},
		func() bson.E {
			return bson.E{Key: "userChannelId", Value: bson.D{{Key: "$regex", Value: "example"}}}
		},
	}
	sortKeys := []string{"created", "serviceName", "state", "userChannelId", "userId", "data.city", "channel"}
	before := mongostore.LookupsAnswered()
	for i := range 150 {
		var f bson.D
		switch rng.IntN(3) {
		case 0:
			f = bson.D{{Key: "userId", Value: pick("alice", "bob", "carol", "Alice")}}
		case 1:
			f = bson.D{{Key: "userChannelId", Value: bson.D{{Key: "$regex", Value: pick("^kate@example\\.org$", "^SAM@EXAMPLE\\.ORG$")}, {Key: "$options", Value: "i"}}}}
		default:
			f = bson.D{{Key: "userChannelId", Value: pick("kate@example.org", "KATE@example.org")}}
		}
		for range rng.IntN(3) {
			// (a key twice in one filter makes FerretDB drop the connection)
			if e := extras[rng.IntN(len(extras))](); !hasDuplicateKey(append(f[:len(f):len(f)], e)) {
				f = append(f, e)
			}
		}
		if rng.IntN(3) == 0 {
			f = bson.D{{Key: "$and", Value: bson.A{f, bson.D{{Key: "state", Value: bson.D{{Key: "$ne", Value: "deleted"}}}}}}}
		}
		q := mongostore.Query{Filter: f}
		for range rng.IntN(3) {
			q.Sort = append(asD(q.Sort), bson.E{Key: sortKeys[rng.IntN(len(sortKeys))], Value: pick(1, -1)})
		}
		if q.Sort != nil && hasDuplicateKey(asD(q.Sort)) {
			q.Sort = nil
		}
		if rng.IntN(3) == 0 {
			q.Skip = int64(rng.IntN(4))
		}
		if rng.IntN(2) == 0 {
			q.Limit = int64(1 + rng.IntN(10))
		}
		if rng.IntN(3) == 0 {
			q.Projection = pick(bson.D{{Key: "serviceName", Value: 1}, {Key: "state", Value: 1}}, bson.D{{Key: "userChannelId", Value: 0}})
		}
		want, werr := scan.Subscriptions().Find(ctx, q)
		got, gerr := fast.Subscriptions().Find(ctx, q)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("query %d %v: scan error %v, lookup error %v", i, q, werr, gerr)
		}
		if !reflect.DeepEqual(fieldsOf(got), fieldsOf(want)) {
			t.Errorf("query %d %v:\nlookup %v\nscan   %v", i, q, ids(got), ids(want))
		}
	}
	if n := mongostore.LookupsAnswered() - before; n < 100 {
		t.Errorf("the field index answered only %d of 150 queries", n)
	}
}

func asD(v any) bson.D {
	d, _ := v.(bson.D)
	return d
}

func hasDuplicateKey(d bson.D) bool {
	seen := map[string]bool{}
	for _, e := range d {
		if seen[e.Key] {
			return true
		}
		seen[e.Key] = true
	}
	return false
}
