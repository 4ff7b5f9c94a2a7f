package mongostore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/embeddedmongo"
)

// FieldIndex finds candidates for equality lookups the server itself
// answers only by reading the whole collection: the embedded store
// (FerretDB v1 pushes nothing but _id equality down to SQLite), through
// SQLite indexes of ours on its file (notify/embeddedmongo.Lookup), and
// FerretDB v1 over PostgreSQL, through PostgreSQL indexes of ours on its
// tables (notify/ferretpg.Index).
type FieldIndex interface {
	// Index creates what Candidates needs for field of collection coll,
	// exact or case-folded.
	Index(ctx context.Context, coll, field string, fold bool) error
	// Candidates returns, in the collection's natural order, the _id of
	// every document whose top-level field may equal value (with fold,
	// ignoring case; value is then a key from FoldKey): a superset. ok
	// is false when it cannot answer, or finds more than limit.
	Candidates(ctx context.Context, coll, field string, fold bool, value string, limit int) (ids []any, ok bool, err error)
	// FoldKey is the key of s for a case-folded lookup, or false when
	// the index cannot answer for s.
	FoldKey(s string) (string, bool)

	// IndexFields creates what Find, Count and Groups need for fields
	// (and composites) of collection coll.
	IndexFields(ctx context.Context, coll string, kinds []embeddedmongo.Field, single []string, composites [][]string) error
	// Find returns the _ids of a page of q, in order; Count counts q's
	// documents; embeddedmongo.ErrUnanswerable when they cannot answer.
	Find(ctx context.Context, q embeddedmongo.Query) ([]any, error)
	Count(ctx context.Context, q embeddedmongo.Query) (int64, error)
	// AtLeast reports whether coll holds at least n documents.
	AtLeast(ctx context.Context, coll string, n int) (bool, error)
	// Groups counts coll's documents by the values of string fields.
	Groups(ctx context.Context, coll string, kinds []embeddedmongo.Field, fields []string, limit int) ([]embeddedmongo.Group, error)
}

// lookupField is a field a FieldIndex covers.
type lookupField struct {
	name string
	// fold: the index is case-folded, and answers equality and a
	// case-insensitive whole-value match alike.
	fold bool
}

// maxCandidates bounds the documents one query reads by _id: a value
// shared by more documents than this is found by the server's scan, which
// costs less than that many round trips.
const maxCandidates = 1000

// SetFieldIndex makes the store answer queries on the fields the
// schemas name (a subscription's userId and userChannelId) from fi. Call
// it before the store is used; nil turns it off.
func (s *Store) SetFieldIndex(fi FieldIndex) { s.fieldIndex = fi }

// EnsureFieldIndexes creates the field index's indexes; nothing without
// one. The primary calls it at start, after EnsureIndexes.
func (s *Store) EnsureFieldIndexes(ctx context.Context) error {
	if s.fieldIndex == nil {
		return nil
	}
	for _, sch := range allSchemas {
		for _, f := range sch.lookups {
			if err := s.fieldIndex.Index(ctx, sch.name, f.name, f.fold); err != nil {
				return err
			}
		}
		if len(sch.indexed) > 0 {
			if err := s.fieldIndex.IndexFields(ctx, sch.name, sch.indexed, sch.single, sch.composites); err != nil {
				return err
			}
		}
	}
	if gc, ok := s.fieldIndex.(groupCounter); ok {
		return gc.KeepGroupCounts(ctx, notify.CollSubscription, subscriptionGroupFields)
	}
	return nil
}

// groupCounter is a field index that can keep the counts of groups exact
// as documents change (the embedded store: triggers of ours on SQLite),
// so that the console's subscription groups are read, not counted.
type groupCounter interface {
	KeepGroupCounts(ctx context.Context, coll string, fields []string) error
}

// useLookup: the store has a field index, and filter is more than an _id
// equality (which the server answers from its index itself).
func (c *Collection[T, P]) useLookup(filter bson.D) bool {
	if c.s.fieldIndex == nil || len(filter) == 0 {
		return false
	}
	if len(filter) == 1 && filter[0].Key == "_id" {
		switch filter[0].Value.(type) {
		case bson.ObjectID, string:
			return false
		}
	}
	return true
}

// scans: on the embedded store, FerretDB answers filter by reading the
// whole collection (anything but a lone _id equality).
func (c *Collection[T, P]) scans(filter bson.D) bool {
	if c.s.fieldIndex == nil {
		return false
	}
	return len(filter) != 1 || !isOnlyIDs(filter)
}

// lookupsAnswered counts queries answered through candidates, and
// indexAnswered those answered by the field index's queries (tests).
var lookupsAnswered, indexAnswered atomic.Int64

// errNoPlan: the query is left to the server.
var errNoPlan = errors.New("no lookup plan")

// candidates finds in filter a condition every selected document meets
// and that the field index (or the filter itself, for _id) turns into a
// short list of candidate ids. The list may hold documents filter does
// not select, never miss one it does.
func (c *Collection[T, P]) candidates(ctx context.Context, filter bson.D) ([]any, error) {
	if c.s.fieldIndex == nil {
		return nil, errNoPlan
	}
	// _id first: it needs no index.
	if ids, ok := idCandidates(filter); ok {
		return ids, nil
	}
	for _, t := range c.terms(filter) {
		ids, ok, err := c.s.fieldIndex.Candidates(ctx, c.schema.name, t.field.name, t.field.fold, t.value, maxCandidates)
		if err != nil {
			return nil, err
		}
		if ok {
			return ids, nil
		}
	}
	return nil, errNoPlan
}

// idCandidates: _id equal to an ObjectId or string, or $in a list of
// them, at the top level or inside $and.
func idCandidates(filter bson.D) ([]any, bool) {
	for _, e := range filter {
		switch e.Key {
		case "_id":
			switch v := e.Value.(type) {
			case bson.ObjectID, string:
				return []any{v}, true
			case bson.D:
				if len(v) != 1 || v[0].Key != "$in" {
					continue
				}
				arr, ok := v[0].Value.(bson.A)
				if !ok || len(arr) > maxCandidates {
					continue
				}
				ids := make([]any, 0, len(arr))
				for _, x := range arr {
					switch x.(type) {
					case bson.ObjectID, string:
					default:
						return nil, false
					}
					if !containsID(ids, x) {
						ids = append(ids, x)
					}
				}
				return ids, true
			}
		case "$and":
			arr, _ := e.Value.(bson.A)
			for _, sub := range arr {
				if d, ok := sub.(bson.D); ok {
					if ids, ok := idCandidates(d); ok {
						return ids, true
					}
				}
			}
		}
	}
	return nil, false
}

func containsID(ids []any, x any) bool {
	for _, y := range ids {
		if y == x {
			return true
		}
	}
	return false
}

type lookupTerm struct {
	field lookupField
	value string
}

// terms are the conditions of filter the field index can answer: a
// covered field equal to a string, or (on a folded field) matching a
// pattern that is one quoted string from ^ to $, with or without the i
// option, at the top level or inside $and.
func (c *Collection[T, P]) terms(filter bson.D) []lookupTerm {
	var out []lookupTerm
	for _, e := range filter {
		if e.Key == "$and" {
			arr, _ := e.Value.(bson.A)
			for _, sub := range arr {
				if d, ok := sub.(bson.D); ok {
					out = append(out, c.terms(d)...)
				}
			}
			continue
		}
		for _, f := range c.schema.lookups {
			if f.name != e.Key {
				continue
			}
			v, ok := e.Value.(string)
			if !ok && f.fold {
				v, ok = wholeValuePattern(e.Value)
			}
			if !ok {
				continue
			}
			if f.fold {
				if v, ok = c.s.fieldIndex.FoldKey(v); !ok {
					continue
				}
			}
			out = append(out, lookupTerm{field: f, value: v})
		}
	}
	return out
}

// wholeValuePattern recognises {$regex: "^<quoted s>$", $options: "" or
// "i"} and returns s: every string it matches equals s ignoring case.
func wholeValuePattern(v any) (string, bool) {
	d, ok := v.(bson.D)
	if !ok || len(d) == 0 || len(d) > 2 {
		return "", false
	}
	var pattern, opts string
	for _, e := range d {
		s, ok := e.Value.(string)
		if !ok {
			return "", false
		}
		switch e.Key {
		case "$regex":
			pattern = s
		case "$options":
			opts = s
		default:
			return "", false
		}
	}
	if (opts != "" && opts != "i") || len(pattern) < 2 || pattern[0] != '^' || pattern[len(pattern)-1] != '$' {
		return "", false
	}
	quoted := pattern[1 : len(pattern)-1]
	s := unquoteMeta(quoted)
	if regexp.QuoteMeta(s) != quoted {
		return "", false
	}
	return s, true
}

// unquoteMeta undoes regexp.QuoteMeta (callers check the round trip).
func unquoteMeta(q string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] == '\\' && i+1 < len(q) {
			i++
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// matching returns, in the order of ids, the documents among ids that
// filter selects, as the server's own query language decides: each is
// read by _id (which the server answers from an index) in an aggregation
// whose second stage applies filter. A refused filter is errNoPlan.
func (c *Collection[T, P]) matching(ctx context.Context, ids []any, filter bson.D) ([]bson.Raw, error) {
	out := make([]bson.Raw, 0, len(ids))
	for _, id := range ids {
		pipeline := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: id}}}}}
		if len(filter) > 0 {
			pipeline = append(pipeline, bson.D{{Key: "$match", Value: filter}})
		}
		cur, err := c.c.Aggregate(ctx, pipeline)
		if err != nil {
			var se mongo.ServerError
			if errors.As(err, &se) {
				return nil, errNoPlan
			}
			return nil, fmt.Errorf("mongostore: find %s: %w", c.schema.name, mapErr(err))
		}
		for cur.Next(ctx) {
			out = append(out, append(bson.Raw(nil), cur.Current...))
		}
		err = cur.Err()
		_ = cur.Close(context.WithoutCancel(ctx))
		if err != nil {
			return nil, fmt.Errorf("mongostore: find %s: %w", c.schema.name, mapErr(err))
		}
	}
	return out, nil
}

// findByLookup answers Find from candidates, with the server's results:
// the filter is the server's (see matching), the order is the server's
// (the candidates come in natural order, and a sort is done as the
// embedded store does it, or left to the server when a sort key holds a
// value whose order is not reproduced here), and projected documents are
// read again by _id with the projection. errNoPlan: use the server's scan.
func (c *Collection[T, P]) findByLookup(ctx context.Context, filter, sortDoc bson.D, skip, limit int64, proj bson.D) ([]P, error) {
	ids, err := c.candidates(ctx, filter)
	if err != nil {
		return nil, err
	}
	docs, err := c.matching(ctx, ids, filter)
	if err != nil {
		return nil, err
	}
	if len(sortDoc) > 0 {
		if !sortRaw(docs, sortDoc) {
			return nil, errNoPlan
		}
	}
	if skip > 0 {
		docs = docs[min(int64(len(docs)), skip):]
	}
	if limit > 0 && int64(len(docs)) > limit {
		docs = docs[:limit]
	}
	out := make([]P, 0, len(docs))
	for _, raw := range docs {
		if len(proj) > 0 {
			id, err := raw.LookupErr("_id")
			if err != nil {
				return nil, errNoPlan
			}
			var ok bool
			raw, ok, err = c.rawByID(ctx, id, proj)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // deleted meanwhile
			}
		}
		rec, err := c.decode(raw, len(proj) == 0)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	lookupsAnswered.Add(1)
	return out, nil
}

// sortRaw sorts docs by sortDoc as FerretDB v1 does (sort.Sort with the
// same comparison over the same input order, so ties come out alike), for
// keys whose values are all missing, null or of one scalar type; false
// (docs untouched in what matters: the caller falls back) otherwise.
func sortRaw(docs []bson.Raw, sortDoc bson.D) bool {
	type key struct {
		path []string
		desc bool
	}
	keys := make([]key, 0, len(sortDoc))
	for _, e := range sortDoc {
		dir, ok := sortDirection(e.Value)
		if !ok || e.Key == "$natural" || e.Key == "" {
			return false
		}
		keys = append(keys, key{path: strings.Split(e.Key, "."), desc: dir < 0})
	}
	// The values of each key, checked to be of one comparable kind.
	vals := make([][]bson.RawValue, len(keys))
	for k, ky := range keys {
		vals[k] = make([]bson.RawValue, len(docs))
		var kind bson.Type
		for i, d := range docs {
			v, ok := lookupPath(d, ky.path)
			if !ok {
				return false
			}
			vals[k][i] = v
			if v.Type == 0 || v.Type == bson.TypeNull {
				continue
			}
			switch v.Type {
			case bson.TypeString, bson.TypeInt32, bson.TypeInt64, bson.TypeBoolean, bson.TypeDateTime, bson.TypeObjectID:
			case bson.TypeDouble:
				if f := v.Double(); f != f {
					return false // NaN
				}
			default:
				return false
			}
			if kind != 0 && kind != v.Type {
				return false
			}
			kind = v.Type
		}
	}
	s := &rawSorter{docs: docs, vals: vals, less: make([]func(a, b bson.RawValue) bool, len(keys))}
	for k, ky := range keys {
		desc := ky.desc
		s.less[k] = func(a, b bson.RawValue) bool {
			c := compareScalar(a, b)
			if desc {
				return c > 0
			}
			return c < 0
		}
	}
	sort.Sort(s)
	return true
}

func sortDirection(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, x == 1 || x == -1
	case int32:
		return int(x), x == 1 || x == -1
	case int64:
		return int(x), x == 1 || x == -1
	case float64:
		return int(x), x == 1 || x == -1
	}
	return 0, false
}

// lookupPath reads a dotted path through documents; a missing field is
// the zero RawValue. false when the path crosses an array (whose order
// rules are not reproduced here).
func lookupPath(d bson.Raw, path []string) (bson.RawValue, bool) {
	cur := d
	for i, p := range path {
		v, err := cur.LookupErr(p)
		if err != nil {
			return bson.RawValue{}, true
		}
		if i == len(path)-1 {
			return v, v.Type != bson.TypeArray && v.Type != bson.TypeEmbeddedDocument
		}
		switch v.Type {
		case bson.TypeEmbeddedDocument:
			cur = v.Document()
		case bson.TypeArray:
			return bson.RawValue{}, false
		default:
			return bson.RawValue{}, true
		}
	}
	return bson.RawValue{}, true
}

// compareScalar orders two values of one type, missing and null first.
func compareScalar(a, b bson.RawValue) int {
	an, bn := a.Type == 0 || a.Type == bson.TypeNull, b.Type == 0 || b.Type == bson.TypeNull
	switch {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	}
	switch a.Type {
	case bson.TypeString:
		return strings.Compare(a.StringValue(), b.StringValue())
	case bson.TypeInt32:
		return cmpOrdered(a.Int32(), b.Int32())
	case bson.TypeInt64:
		return cmpOrdered(a.Int64(), b.Int64())
	case bson.TypeDouble:
		return cmpOrdered(a.Double(), b.Double())
	case bson.TypeDateTime:
		return cmpOrdered(a.DateTime(), b.DateTime())
	case bson.TypeBoolean:
		x, y := a.Boolean(), b.Boolean()
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case bson.TypeObjectID:
		x, y := a.ObjectID(), b.ObjectID()
		return strings.Compare(string(x[:]), string(y[:]))
	}
	return 0
}

func cmpOrdered[T int32 | int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rawSorter mirrors FerretDB's docsSorter: each key but the last decides
// when it orders the pair either way; the last key's answer stands.
type rawSorter struct {
	docs []bson.Raw
	vals [][]bson.RawValue
	less []func(a, b bson.RawValue) bool
}

func (s *rawSorter) Len() int { return len(s.docs) }

func (s *rawSorter) Swap(i, j int) {
	s.docs[i], s.docs[j] = s.docs[j], s.docs[i]
	for _, v := range s.vals {
		v[i], v[j] = v[j], v[i]
	}
}

func (s *rawSorter) Less(i, j int) bool {
	last := len(s.less) - 1
	for k := 0; k < last; k++ {
		a, b := s.vals[k][i], s.vals[k][j]
		switch {
		case s.less[k](a, b):
			return true
		case s.less[k](b, a):
			return false
		}
	}
	return s.less[last](s.vals[last][i], s.vals[last][j])
}

// countByLookup answers Count from candidates; errNoPlan: use the server.
func (c *Collection[T, P]) countByLookup(ctx context.Context, filter bson.D) (int64, error) {
	ids, err := c.candidates(ctx, filter)
	if err != nil {
		return 0, err
	}
	docs, err := c.matching(ctx, ids, filter)
	if err != nil {
		return 0, err
	}
	lookupsAnswered.Add(1)
	return int64(len(docs)), nil
}

// updateByLookup answers UpdateMany from candidates: each selected one is
// updated by _id. The server's own UpdateMany is no more atomic (the
// embedded store reads the selected documents, then writes each back);
// a document changed between the check and its update gets the update as
// it would have from the server's scan a moment earlier.
func (c *Collection[T, P]) updateByLookup(ctx context.Context, filter, update bson.D) (int64, error) {
	ids, err := c.candidates(ctx, filter)
	if err != nil {
		return 0, err
	}
	if !isOnlyIDs(filter) {
		docs, err := c.matching(ctx, ids, filter)
		if err != nil {
			return 0, err
		}
		ids = ids[:0]
		for _, d := range docs {
			id, err := d.LookupErr("_id")
			if err != nil {
				return 0, errNoPlan
			}
			var v any
			if err := id.Unmarshal(&v); err != nil {
				return 0, errNoPlan
			}
			ids = append(ids, v)
		}
	}
	var n int64
	for _, id := range ids {
		res, err := c.c.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, update)
		if err != nil {
			return n, fmt.Errorf("mongostore: update %s: %w", c.schema.name, mapErr(err))
		}
		n += res.ModifiedCount
	}
	lookupsAnswered.Add(1)
	return n, nil
}

// isOnlyIDs: filter is {_id: x} or {_id: {$in: [...]}} alone, which the
// candidates answer exactly.
func isOnlyIDs(filter bson.D) bool {
	if len(filter) != 1 || filter[0].Key != "_id" {
		return false
	}
	_, ok := idCandidates(filter)
	return ok
}
