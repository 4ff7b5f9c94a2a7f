package mongostore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify/embeddedmongo"
)

// maxIndexPage is the most records a list answered from the field index
// returns when each is read by _id through the server (about half a
// millisecond each): a field index that cannot read documents itself, or
// a projected list. A longer answer is the server's to give, or refused
// under a scan limit.
const maxIndexPage = 1000

// MaxIndexList is the most records a list answered from the field index
// returns when the index reads the documents itself, in bulk (the
// embedded store and FerretDB over PostgreSQL, see [docFinder]): a list without a limit, or with a
// larger one, that matches more is the server's to give, or refused
// under a scan limit (page through it with limit and skip). The whole
// list is held in memory while it is built and sent as JSON: on a loaded
// machine 5,000 subscriptions took 0.19–0.25 s and +28–34 MB of peak
// resident memory, 10,000 0.26–0.43 s and +30–48 MB, 50,000 +200 MB
// (BENCHMARKS.md, "Notify console reads at scale"); so the bound keeps
// such a list within the 250 ms and 50 MB every list is held to.
const MaxIndexList = 5000

// docFinder is a FieldIndex that reads the documents of a page itself
// (embeddedmongo.Lookup.FindDocs: one SQLite query per few hundred
// documents; ferretpg.Index.FindDocs: the page and its documents in one
// PostgreSQL statement) instead of a server round trip for each. raw
// nil: the document could not be read there; read it by id.
type docFinder interface {
	FindDocs(ctx context.Context, q embeddedmongo.Query, each func(id any, raw bson.Raw) error) error
}

// indexQuery translates filter, sort, skip and limit into a query the
// field index answers exactly, or false: the filter is a conjunction of
// conditions on the schema's indexed fields (equality to a value, $eq,
// $ne, $in, $nin, $gt, $gte, $lt, $lte, inside $and too) and of $ors of
// such conjunctions, and every sort key is an indexed field. (The field
// index may still refuse it: a field of the wrong kind, a plan that
// would read the whole table.)
func (c *Collection[T, P]) indexQuery(filter, sortDoc bson.D, skip, limit int64) (embeddedmongo.Query, bool) {
	q := embeddedmongo.Query{Coll: c.schema.name, Fields: c.schema.indexed, Skip: skip, Limit: limit, Composites: c.schema.composites}
	if len(c.schema.indexed) == 0 {
		return q, false
	}
	if !c.conds(filter, &q) {
		return q, false
	}
	for _, e := range sortDoc {
		dir, ok := sortDirection(e.Value)
		if !ok || !c.isIndexed(e.Key) {
			return q, false
		}
		q.Order = append(q.Order, embeddedmongo.Order{Field: e.Key, Desc: dir < 0})
	}
	return q, true
}

func (c *Collection[T, P]) isIndexed(f string) bool {
	for _, x := range c.schema.indexed {
		if x.Name == f {
			return true
		}
	}
	return false
}

// conds adds filter's conditions to q: to q.Conds, and each $or (at the
// top level or inside $and) to q.Any, its branches conjunctions of
// conditions (an $or inside an $or is not answered).
func (c *Collection[T, P]) conds(filter bson.D, q *embeddedmongo.Query) bool {
	return c.conj(filter, &q.Conds, &q.Any)
}

// conj adds filter's conditions to out and its disjunctions to ors (nil:
// none allowed).
func (c *Collection[T, P]) conj(filter bson.D, out *[]embeddedmongo.Cond, ors *[][][]embeddedmongo.Cond) bool {
	for _, e := range filter {
		if e.Key == "$and" || e.Key == "$or" {
			arr, ok := e.Value.(bson.A)
			if !ok || len(arr) == 0 {
				return false // the server's error to give
			}
			if e.Key == "$or" && ors == nil {
				return false
			}
			var group [][]embeddedmongo.Cond
			for _, sub := range arr {
				d, ok := sub.(bson.D)
				if !ok {
					return false
				}
				if e.Key == "$and" {
					if !c.conj(d, out, ors) {
						return false
					}
					continue
				}
				branch := []embeddedmongo.Cond{}
				if !c.conj(d, &branch, nil) {
					return false
				}
				group = append(group, branch)
			}
			if e.Key == "$or" {
				*ors = append(*ors, group)
			}
			continue
		}
		if !c.isIndexed(e.Key) {
			return false
		}
		ops, isOps := opDoc(e.Value)
		if !isOps {
			if !scalar(e.Value) {
				return false
			}
			*out = append(*out, embeddedmongo.Cond{Field: e.Key, Op: embeddedmongo.OpEq, Values: []any{e.Value}})
			continue
		}
		for _, o := range ops {
			cond := embeddedmongo.Cond{Field: e.Key}
			switch o.Key {
			case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte":
				if !scalar(o.Value) {
					return false
				}
				cond.Op, cond.Values = strings.TrimPrefix(o.Key, "$"), []any{o.Value}
			case "$in", "$nin":
				arr, ok := o.Value.(bson.A)
				if !ok {
					return false
				}
				for _, x := range arr {
					if !scalar(x) {
						return false
					}
				}
				cond.Op, cond.Values = embeddedmongo.OpEq, []any(arr)
				if o.Key == "$nin" {
					cond.Op = embeddedmongo.OpNe
				}
			default:
				return false
			}
			*out = append(*out, cond)
		}
	}
	return true
}

// scalar: a value the field index compares (the kind is checked there).
func scalar(v any) bool {
	switch v.(type) {
	case nil, string, bool, bson.DateTime, time.Time:
		return true
	}
	return false
}

// findByIndex answers Find from the field index: the page's documents
// read by the index in bulk where it can (docFinder; a projection of
// top-level fields applied here),
// otherwise the _ids of the page in order, then each record read by _id
// (which the server answers from its index). errNoPlan: the query is not
// the index's, or it matches more records than such a list returns.
func (c *Collection[T, P]) findByIndex(ctx context.Context, filter, sortDoc bson.D, skip, limit int64, proj bson.D) ([]P, error) {
	fi := c.s.fieldIndex
	if fi == nil {
		return nil, errNoPlan
	}
	q, ok := c.indexQuery(filter, sortDoc, skip, limit)
	if !ok {
		return nil, errNoPlan
	}
	df, bulk := fi.(docFinder)
	project, simple := simpleProjection(proj)
	bulk = bulk && simple
	most := int64(maxIndexPage)
	if bulk {
		most = MaxIndexList
	}
	expect := q.Limit
	if q.Limit <= 0 || q.Limit > most {
		n, err := fi.Count(ctx, q)
		if err != nil {
			return nil, indexErr(err)
		}
		if n-q.Skip > most {
			return nil, errNoPlan
		}
		q.Limit, expect = most, n-q.Skip
	}
	var out []P
	if bulk {
		out = make([]P, 0, max(0, min(expect, docsPrealloc)))
		var failed error // the callback's own error, already worded
		err := df.FindDocs(ctx, q, func(id any, raw bson.Raw) error {
			if raw == nil {
				r, ok, err := c.rawByID(ctx, id, nil)
				if err != nil || !ok {
					failed = err
					return err
				}
				raw = r
			}
			rec, err := c.decode(project(raw), len(proj) == 0)
			if err != nil {
				failed = err
				return err
			}
			out = append(out, rec)
			return nil
		})
		if failed != nil {
			return nil, failed
		}
		if err != nil {
			return nil, indexErr(err)
		}
		indexAnswered.Add(1)
		return out, nil
	}
	ids, err := fi.Find(ctx, q)
	if err != nil {
		return nil, indexErr(err)
	}
	out = make([]P, 0, len(ids))
	for _, id := range ids {
		raw, ok, err := c.rawByID(ctx, id, proj)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // deleted meanwhile
		}
		rec, err := c.decode(raw, len(proj) == 0)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	indexAnswered.Add(1)
	return out, nil
}

// simpleProjection returns, for a projection of top-level fields each
// included (1) or each excluded (0), with _id included unless excluded,
// the function that projects a document as the server does: its fields
// kept in the document's order. false: another projection (dotted
// paths, operators, other values, inclusion mixed with exclusion),
// left to the server. No projection projects nothing.
func simpleProjection(proj bson.D) (func(bson.Raw) bson.Raw, bool) {
	if len(proj) == 0 {
		return func(r bson.Raw) bson.Raw { return r }, true
	}
	fields := make(map[string]bool, len(proj))
	include, exclude := false, false
	for _, e := range proj {
		v, ok := zeroOrOne(e.Value)
		if !ok || e.Key == "" || strings.ContainsAny(e.Key, ".$") || fields[e.Key] {
			return nil, false
		}
		fields[e.Key] = v == 1
		if e.Key == "_id" {
			continue
		}
		if v == 1 {
			include = true
		} else {
			exclude = true
		}
	}
	if include && exclude {
		return nil, false
	}
	if !include && !exclude {
		include = fields["_id"] // {_id: 1} keeps only _id, {_id: 0} all else
	}
	return func(r bson.Raw) bson.Raw {
		elems, err := r.Elements()
		if err != nil {
			return r // decode reports it
		}
		out := make([]byte, 4, len(r))
		for _, el := range elems {
			keep, named := fields[el.Key()]
			switch {
			case el.Key() == "_id" && !named:
				keep = true
			case !include && !named:
				keep = true
			}
			if keep {
				out = append(out, el...)
			}
		}
		out = append(out, 0)
		binary.LittleEndian.PutUint32(out, uint32(len(out)))
		return out
	}, true
}

// zeroOrOne is a projection value 0 or 1 of any numeric type.
func zeroOrOne(v any) (int, bool) {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return 0, false
	}
	switch f {
	case 0:
		return 0, true
	case 1:
		return 1, true
	}
	return 0, false
}

// docsPrealloc caps the room made for a list's records before they are
// read: a count may include records deleted before the read.
const docsPrealloc = 1000

// rawByID reads one record by _id (which the server answers from its
// index), projected by proj if given; false: it is not there (deleted
// since an index named it).
func (c *Collection[T, P]) rawByID(ctx context.Context, id any, proj bson.D) (bson.Raw, bool, error) {
	opts := options.FindOne()
	if len(proj) > 0 {
		opts.SetProjection(proj)
	}
	raw, err := c.c.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, opts).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("mongostore: find %s: %w", c.schema.name, mapErr(err))
	}
	return raw, true, nil
}

// countByIndex answers Count from the field index; errNoPlan: not the
// index's query.
func (c *Collection[T, P]) countByIndex(ctx context.Context, filter bson.D) (int64, error) {
	if c.s.fieldIndex == nil {
		return 0, errNoPlan
	}
	q, ok := c.indexQuery(filter, nil, 0, 0)
	if !ok {
		return 0, errNoPlan
	}
	n, err := c.s.fieldIndex.Count(ctx, q)
	if err != nil {
		return 0, indexErr(err)
	}
	indexAnswered.Add(1)
	return n, nil
}

func indexErr(err error) error {
	if errors.Is(err, embeddedmongo.ErrUnanswerable) {
		return errNoPlan
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("mongostore: %w", err)
}

// WithScanLimit returns ctx marked so that a read of the store made with
// it that no index answers (see the package doc) is refused with an
// [UnindexedError] instead of reading a collection of more than n
// documents (0: no limit). The API marks its lists and counts with it.
// It applies where the field index is (the embedded store, FerretDB on
// PostgreSQL with ferretdbPostgresUri); MongoDB, and FerretDB on
// PostgreSQL without it, scan on the server, bounded by the call timeout
// of [WithCallTimeout].
func WithScanLimit(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, scanLimitKey{}, n)
}

type scanLimitKey struct{}

// DefaultScanLimit is the scan limit the API uses: the size up to which a
// collection is read whole for a filter no index answers (about a second
// of the embedded store's time).
const DefaultScanLimit = 10000

// UnindexedError refuses a read no index answers over a collection too
// large to read whole. Its text says which conditions are fast.
type UnindexedError struct {
	Collection string
	Limit      int
	Fast       []string // the indexed fields
	MaxList    int      // the most records a list answered from them returns
}

func (e *UnindexedError) Error() string {
	return fmt.Sprintf("this filter cannot be answered from an index and the %s collection holds more than %d records, "+
		"more than a request may read; use only equality, $in, $ne, $nin, $gt, $gte, $lt and $lte on %s (joined by $and or $or), "+
		"sort only on those fields, and give a limit of at most %d (page through a longer list with skip), "+
		"or add such a condition that selects at most %d records",
		e.Collection, e.Limit, strings.Join(e.Fast, ", "), e.MaxList, maxCandidates)
}

// StatusCode makes it a 400 in the API.
func (e *UnindexedError) StatusCode() int { return http.StatusBadRequest }

// checkScan refuses, under a scan limit, a read that the server would
// answer by reading a collection larger than the limit.
func (c *Collection[T, P]) checkScan(ctx context.Context) error {
	n, _ := ctx.Value(scanLimitKey{}).(int)
	if n <= 0 || c.s.fieldIndex == nil {
		return nil
	}
	over, err := c.s.fieldIndex.AtLeast(ctx, c.schema.name, n+1)
	if err != nil {
		return indexErr(err)
	}
	if !over {
		return nil
	}
	fast := make([]string, 0, len(c.schema.indexed))
	for _, f := range c.schema.indexed {
		if !f.Unindexed { // fast only beside an indexed condition
			fast = append(fast, f.Name)
		}
	}
	most := maxIndexPage
	if _, ok := c.s.fieldIndex.(docFinder); ok {
		most = MaxIndexList
	}
	return &UnindexedError{Collection: c.schema.name, Limit: n, Fast: fast, MaxList: most}
}
