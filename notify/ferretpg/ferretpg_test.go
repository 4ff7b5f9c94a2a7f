package ferretpg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/embeddedmongo"
	"github.com/govkit/govkit/notify/mongostore"
)

// ix names the embedded field of recorder, whose methods include Index.
type ix = Index

// recorder is the field index the store is given: it records what the
// store asks, so that the test can explain the SQL of each, and whether
// the index answered it.
type recorder struct {
	*ix
	mu     sync.Mutex
	finds  []embeddedmongo.Query
	docs   []embeddedmongo.Query
	counts []embeddedmongo.Query
	groups [][]embeddedmongo.Field
	missed []string
}

func (r *recorder) note(what string, err error, f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if errors.Is(err, embeddedmongo.ErrUnanswerable) {
		r.missed = append(r.missed, what)
		return
	}
	f()
}

func (r *recorder) Find(ctx context.Context, q embeddedmongo.Query) ([]any, error) {
	ids, err := r.ix.Find(ctx, q)
	r.note(fmt.Sprintf("find %+v", q), err, func() { r.finds = append(r.finds, q) })
	return ids, err
}

// FindDocs is how the store reads its lists (mongostore's docFinder).
func (r *recorder) FindDocs(ctx context.Context, q embeddedmongo.Query, each func(id any, raw bson.Raw) error) error {
	err := r.ix.FindDocs(ctx, q, each)
	r.note(fmt.Sprintf("docs %+v", q), err, func() { r.docs = append(r.docs, q) })
	return err
}

func (r *recorder) Count(ctx context.Context, q embeddedmongo.Query) (int64, error) {
	n, err := r.ix.Count(ctx, q)
	r.note(fmt.Sprintf("count %+v", q), err, func() { r.counts = append(r.counts, q) })
	return n, err
}

func (r *recorder) Groups(ctx context.Context, coll string, kinds []embeddedmongo.Field, fields []string, limit int) ([]embeddedmongo.Group, error) {
	gs, err := r.ix.Groups(ctx, coll, kinds, fields, limit)
	r.note("groups", err, func() { r.groups = append(r.groups, kinds) })
	return gs, err
}

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// sub is subscription i of n: ten services, one in three by SMS, five in
// seven confirmed, one in seven unconfirmed, one in seven deleted, every
// combination of the three present; created over a year (each at its own
// time), updated with ties, a user per ten subscriptions.
func sub(i, n int) *notify.Subscription {
	s := &notify.Subscription{
		ServiceName:   fmt.Sprintf("svc%d", i%10),
		Channel:       notify.ChannelEmail,
		UserChannelID: fmt.Sprintf("u%d@example.org", i),
		State:         notify.StateConfirmed,
		UserID:        fmt.Sprintf("user%d", i/10),
		Data:          notify.Fields{{Key: "city", Value: fmt.Sprintf("city%d", i%100)}},
	}
	if i%3 == 2 {
		s.Channel = notify.ChannelSMS
		s.UserChannelID = fmt.Sprintf("250%07d", i)
	}
	switch i % 7 {
	case 3:
		s.State = notify.StateUnconfirmed
	case 5:
		s.State = notify.StateDeleted
	}
	if i%1000 == 999 {
		s.UserChannelID = strings.ToUpper(s.UserChannelID) // found ignoring case
	}
	s.Created = epoch.Add(time.Duration(i) * (365 * 24 * time.Hour / time.Duration(n)))
	s.Updated = epoch.Add(time.Duration(i%500) * time.Hour)
	return s
}

// openStore opens a store on database notify of the FerretDB at uri,
// closed when the test ends.
func openStore(t testing.TB, uri string) *mongostore.Store {
	t.Helper()
	st, err := mongostore.Open(context.Background(), uri, mongostore.Options{Database: "notify"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st
}

func seed(t testing.TB, st *mongostore.Store, n int) {
	t.Helper()
	ctx := context.Background()
	batch := make([]*notify.Subscription, 0, 1000)
	for i := range n {
		batch = append(batch, sub(i, n))
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.Subscriptions().InsertMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var notes []*notify.Notification
	for d := range 365 {
		at := epoch.Add(time.Duration(d) * 24 * time.Hour)
		notes = append(notes, &notify.Notification{
			Meta:        notify.Meta{Created: at, Updated: at.Add(time.Hour)},
			ServiceName: fmt.Sprintf("svc%d", d%10), Channel: notify.ChannelEmail, IsBroadcast: d%3 != 0, State: notify.StateSent,
			Message: notify.Fields{{Key: "subject", Value: fmt.Sprint("news of day ", d)}},
		})
	}
	if err := st.Notifications().InsertMany(ctx, notes); err != nil {
		t.Fatal(err)
	}
	var bounces []*notify.Bounce
	for i := 0; i < n; i += 50 {
		at := epoch.Add(time.Duration(i%365) * 24 * time.Hour)
		state := notify.BounceActive
		if i%200 == 0 {
			state = notify.BounceDeleted
		}
		bounces = append(bounces, &notify.Bounce{
			Meta: notify.Meta{Created: at, Updated: at.Add(time.Duration(i) * time.Second)}, Channel: notify.ChannelEmail,
			UserChannelID: fmt.Sprintf("u%d@example.org", i), State: state, HardBounceCount: 1,
		})
	}
	if err := st.Bounces().InsertMany(ctx, bounces); err != nil {
		t.Fatal(err)
	}
}

// read is one of the reads the console and the API make.
type read struct {
	coll   string
	filter bson.D
	sort   bson.D
	skip   int64
	unique bool // the sort key is unique: the order is fixed, not only the keys
}

func reads(n int) []read {
	d := func(kv ...any) bson.D {
		var out bson.D
		for i := 0; i < len(kv); i += 2 {
			out = append(out, bson.E{Key: kv[i].(string), Value: kv[i+1]})
		}
		return out
	}
	addr := sub(n/2, n).UserChannelID
	return []read{
		{coll: "subscription", sort: d("created", -1), unique: true},
		{coll: "subscription", sort: d("created", -1), skip: 50, unique: true},
		{coll: "subscription", sort: d("created", -1), skip: int64(n / 2), unique: true},
		{coll: "subscription", sort: d("created", 1), unique: true},
		{coll: "subscription", sort: d("updated", -1)},
		{coll: "subscription", sort: d("serviceName", 1)},
		{coll: "subscription", sort: d("userChannelId", 1), unique: true},
		{coll: "subscription", sort: d("state", 1)},
		{coll: "subscription", filter: d("serviceName", "svc3"), sort: d("created", -1), unique: true},
		{coll: "subscription", filter: d("serviceName", "svc3", "state", "confirmed"), sort: d("created", -1), skip: 25, unique: true},
		{coll: "subscription", filter: d("serviceName", "svc3", "channel", "sms", "state", "unconfirmed"), sort: d("created", -1), unique: true},
		{coll: "subscription", filter: d("state", "deleted"), sort: d("updated", -1)},
		{coll: "subscription", filter: d("userChannelId", addr), sort: d("created", -1), unique: true},
		{coll: "subscription", filter: d("state", d("$ne", "confirmed")), sort: d("created", 1), skip: 100, unique: true},
		{coll: "subscription", filter: d("serviceName", d("$in", bson.A{"svc1", "svc2"}), "created", d("$gte", "2025-04-11T00:00:00.000Z")), sort: d("created", 1), unique: true},
		{coll: "notification", sort: d("created", -1), unique: true},
		{coll: "notification", filter: d("serviceName", "svc3", "isBroadcast", true), sort: d("created", -1), unique: true},
		{coll: "bounce", sort: d("updated", -1), unique: true},
		{coll: "bounce", filter: d("state", "active"), sort: d("updated", -1), unique: true},
		{coll: "bounce", filter: d("userChannelId", "u50@example.org"), sort: d("updated", -1), unique: true},
	}
}

func counts(n int) []read {
	d := func(kv ...any) bson.D {
		var out bson.D
		for i := 0; i < len(kv); i += 2 {
			out = append(out, bson.E{Key: kv[i].(string), Value: kv[i+1]})
		}
		return out
	}
	return []read{
		{coll: "subscription"},
		{coll: "subscription", filter: d("serviceName", "svc3")},
		{coll: "subscription", filter: d("serviceName", "svc3", "state", "confirmed")},
		{coll: "subscription", filter: d("serviceName", "svc3", "channel", "email", "state", "confirmed")},
		{coll: "subscription", filter: d("state", "unconfirmed")},
		{coll: "subscription", filter: d("channel", "sms")},
		{coll: "subscription", filter: d("state", d("$nin", bson.A{"confirmed", "deleted"}))},
		{coll: "notification"},
		{coll: "bounce"},
		{coll: "bounce", filter: d("state", "active")},
	}
}

// page is a list read through st: ids and the sort key of each.
func page(t *testing.T, st *mongostore.Store, r read) (ids, keys []string) {
	t.Helper()
	ctx := context.Background()
	q := mongostore.Query{Filter: r.filter, Sort: r.sort, Skip: r.skip, Limit: 25}
	if q.Filter == nil {
		q.Filter = bson.D{}
	}
	add := func(id string, m map[string]any) {
		ids = append(ids, id)
		keys = append(keys, fmt.Sprint(m[r.sort[0].Key]))
	}
	asMap := func(v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	switch r.coll {
	case "subscription":
		recs, err := st.Subscriptions().Find(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range recs {
			add(x.ID.Hex(), asMap(x))
		}
	case "notification":
		recs, err := st.Notifications().Find(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range recs {
			add(x.ID.Hex(), asMap(x))
		}
	case "bounce":
		recs, err := st.Bounces().Find(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range recs {
			add(x.ID.Hex(), asMap(x))
		}
	}
	return ids, keys
}

func count(t *testing.T, st *mongostore.Store, r read) int64 {
	t.Helper()
	ctx := context.Background()
	f := r.filter
	if f == nil {
		f = bson.D{}
	}
	var n int64
	var err error
	switch r.coll {
	case "subscription":
		n, err = st.Subscriptions().Count(ctx, f)
	case "notification":
		n, err = st.Notifications().Count(ctx, f)
	case "bounce":
		n, err = st.Bounces().Count(ctx, f)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// plan is a node of EXPLAIN (FORMAT JSON)'s tree.
type plan struct {
	NodeType     string `json:"Node Type"`
	RelationName string `json:"Relation Name"`
	IndexName    string `json:"Index Name"`
	Plans        []plan `json:"Plans"`
}

func (p plan) walk(f func(plan)) {
	f(p)
	for _, c := range p.Plans {
		c.walk(f)
	}
}

func explain(t *testing.T, x *Index, sqlq string, args ...any) plan {
	t.Helper()
	var out []struct{ Plan plan }
	var raw []byte
	if err := x.pool.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sqlq, args...).Scan(&raw); err != nil {
		t.Fatalf("explain %s: %v", sqlq, err)
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("explain %s: %s", sqlq, raw)
	}
	return out[0].Plan
}

// usesOurIndexes: the plan reads the collection's table through indexes
// of ours only, never by a sequential scan.
func usesOurIndexes(p plan, table string) (bool, string) {
	ours, seq := false, false
	var nodes []string
	p.walk(func(n plan) {
		nodes = append(nodes, strings.TrimSpace(n.NodeType+" "+n.IndexName))
		if n.NodeType == "Seq Scan" && n.RelationName == table {
			seq = true
		}
		if strings.HasPrefix(n.IndexName, "govkit_") {
			ours = true
		}
	})
	return ours && !seq, strings.Join(nodes, " > ")
}

// TestReadsOnFerretDBAnswerAsFerretDBFromOurIndexes: on a real FerretDB
// over PostgreSQL holding 20,000 subscriptions (and a year of
// notifications and bounces), every read shape of the console — lists
// with each order, deep skips, the console's filters, counts with and
// without where, the stats' groups — answered through the store with
// the field index gives what FerretDB alone gives (the same records in
// the same order; for sorts with ties, the same keys in order), was
// answered by the index (not handed back to FerretDB), and the SQL it
// ran is planned by PostgreSQL on indexes of ours, without a sequential
// scan of the collection's table.
func TestReadsOnFerretDBAnswerAsFerretDBFromOurIndexes(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 20,000 subscriptions")
	}
	n := 20000
	mongoURI, pgURL := testsvc.RequireFerretDBOnPostgres(t)
	ctx := context.Background()
	open := func() *mongostore.Store { return openStore(t, mongoURI) }
	plain, st := open(), open()
	if _, err := st.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	seed(t, st, n)
	x, err := Open(ctx, pgURL, "notify")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Close() })
	rec := &recorder{ix: x}
	st.SetFieldIndex(rec)
	if err := st.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	// what autovacuum does after a bulk insert: the visibility map lets
	// a count without conditions read an index alone
	for _, c := range []string{"subscription", "notification", "bounce"} {
		tab, err := x.table(ctx, c, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.pool.Exec(ctx, "VACUUM ANALYZE "+x.qualified(tab)); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("lists", func(t *testing.T) {
		for _, r := range reads(n) {
			name := fmt.Sprintf("%s %v %v skip %d", r.coll, r.filter, r.sort, r.skip)
			gotIDs, gotKeys := page(t, st, r)
			wantIDs, wantKeys := page(t, plain, r)
			if len(wantIDs) == 0 {
				t.Errorf("%s: FerretDB finds nothing; the read shows nothing", name)
			}
			if !slices.Equal(gotKeys, wantKeys) {
				t.Errorf("%s: keys %v, FerretDB's %v", name, gotKeys, wantKeys)
			}
			if r.unique && !slices.Equal(gotIDs, wantIDs) {
				t.Errorf("%s: records %v, FerretDB's %v", name, gotIDs, wantIDs)
			}
		}
	})
	t.Run("counts", func(t *testing.T) {
		for _, r := range counts(n) {
			if got, want := count(t, st, r), count(t, plain, r); got != want || want == 0 {
				t.Errorf("count %s %v: %d, FerretDB's %d", r.coll, r.filter, got, want)
			}
		}
	})
	t.Run("groups", func(t *testing.T) {
		got, _, err := st.SubscriptionGroups(ctx, 200)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := plain.SubscriptionGroups(ctx, 200)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || len(want) != 60 {
			t.Errorf("groups\n%v\nFerretDB's\n%v", got, want)
		}
	})
	t.Run("a user's and an address's subscriptions", func(t *testing.T) {
		for _, f := range []bson.D{
			{{Key: "userId", Value: "user123"}},
			{{Key: "userChannelId", Value: sub(1999, n).UserChannelID}},
			{{Key: "userChannelId", Value: bson.D{{Key: "$regex", Value: "^" + strings.ToLower(sub(2999, n).UserChannelID) + "$"}, {Key: "$options", Value: "i"}}}},
		} {
			q := mongostore.Query{Filter: f, Sort: bson.D{{Key: "created", Value: 1}}}
			got, err := st.Subscriptions().Find(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			want, err := plain.Subscriptions().Find(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || len(want) == 0 {
				t.Fatalf("%v: %d records, FerretDB's %d", f, len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID {
					t.Errorf("%v: record %d is %s, FerretDB's %s", f, i, got[i].ID.Hex(), want[i].ID.Hex())
				}
			}
		}
	})

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.missed) > 0 {
		t.Errorf("left to FerretDB: %v", rec.missed)
	}
	// PostgreSQL plans by cost. A read that touches few rows must be an
	// index's: a page near either end of a sort, a count of at most an
	// eighth of the collection. A count without conditions reads an index
	// alone (any index: the smallest). A read that touches most of the
	// table anyway — a page in the middle of the sort, a count of a third
	// of it, the groups — may be PostgreSQL's parallel scan of the table,
	// which its planner finds cheaper than reaching every row through an
	// index (PostgreSQL answers a condition on an expression index only
	// from the table's rows, never from the index alone); it is still one
	// statement inside PostgreSQL, logged here.
	t.Run("plans", func(t *testing.T) {
		check := func(what, coll, sqlq string, args []any, strict bool) {
			tab, err := x.table(ctx, coll, false)
			if err != nil {
				t.Fatal(err)
			}
			p := explain(t, x, sqlq, args...)
			ok, nodes := usesOurIndexes(p, tab)
			if strict && !ok {
				t.Errorf("%s: plan %s", what, nodes)
				return
			}
			t.Logf("%s: %s", what, nodes)
		}
		total := map[string]int64{}
		for _, c := range []string{"subscription", "notification", "bounce"} {
			total[c] = count(t, plain, read{coll: c})
		}
		for i, q := range append(slices.Clone(rec.finds), rec.docs...) {
			tab, _ := x.table(ctx, q.Coll, false)
			what, sqlf := "find", x.findSQL
			if i >= len(rec.finds) {
				what, sqlf = "docs", x.docsSQL
			}
			sqlq, args, err := sqlf(ctx, tab, q)
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("%s %s %v %v skip %d", what, q.Coll, q.Conds, q.Order, q.Skip), q.Coll, sqlq, args, q.Skip <= total[q.Coll]/8)
		}
		for _, q := range rec.counts {
			tab, _ := x.table(ctx, q.Coll, false)
			sqlq, args, err := x.countSQL(ctx, tab, q)
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("count %s %v", q.Coll, q.Conds)
			if len(q.Conds) == 0 {
				if p := explain(t, x, sqlq); !strings.Contains(fmt.Sprint(p), "Index Only Scan") {
					t.Errorf("%s: plan %+v", what, p)
				}
				continue
			}
			m, err := x.Count(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			check(what, q.Coll, sqlq, args, m <= total[q.Coll]/8)
		}
		// the check every read makes first: an empty partial index
		for _, q := range rec.counts[:1] {
			tab, _ := x.table(ctx, q.Coll, false)
			check("the check for fields of another type", q.Coll, fmt.Sprintf(`SELECT 1 FROM %s WHERE %s LIMIT 1`, x.qualified(tab), oddExpr(q.Fields)), nil, true)
		}
		for _, kinds := range rec.groups {
			tab, _ := x.table(ctx, "subscription", false)
			sqlq, err := x.groupsSQL(ctx, tab, kinds, []string{"serviceName", "state", "channel"})
			if err != nil {
				t.Fatal(err)
			}
			check("groups", "subscription", sqlq, []any{201}, false)
		}
		// lists come with their documents (FindDocs), read in bulk
		if len(rec.docs) == 0 || len(rec.counts) == 0 || len(rec.groups) == 0 {
			t.Errorf("the index answered %d lists (%d by _id alone), %d counts, %d groups", len(rec.docs), len(rec.finds), len(rec.counts), len(rec.groups))
		}
	})

	// A document whose state is an array (which PostgreSQL would not
	// compare as MongoDB does) makes the collection's reads FerretDB's
	// again, with FerretDB's answers.
	t.Run("a field of another type is left to FerretDB", func(t *testing.T) {
		client, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
		if err != nil {
			t.Fatal(err)
		}
		defer client.Disconnect(context.Background())
		odd := bson.D{{Key: "serviceName", Value: "svc3"}, {Key: "channel", Value: "email"}, {Key: "userChannelId", Value: "odd@example.org"},
			{Key: "state", Value: bson.A{"confirmed"}}, {Key: "created", Value: bson.DateTime(epoch.UnixMilli())}, {Key: "updated", Value: bson.DateTime(epoch.UnixMilli())}}
		if _, err := client.Database("notify").Collection("subscription").InsertOne(ctx, odd); err != nil {
			t.Fatal(err)
		}
		missed := len(rec.missed)
		rec.mu.Unlock()
		r := read{coll: "subscription", filter: bson.D{{Key: "serviceName", Value: "svc3"}, {Key: "state", Value: "confirmed"}}, sort: bson.D{{Key: "created", Value: 1}}}
		got, want := count(t, st, r), count(t, plain, r)
		gotIDs, _ := page(t, st, r)
		wantIDs, _ := page(t, plain, r)
		rec.mu.Lock()
		if got != want || !slices.Equal(gotIDs, wantIDs) {
			t.Errorf("count %d, FerretDB's %d; page %v, FerretDB's %v", got, want, gotIDs, wantIDs)
		}
		if len(rec.missed) != missed+2 {
			t.Errorf("the index answered with an array in a string field: %v", rec.missed[missed:])
		}
	})
}
