package httpapi

import (
	"bytes"
	"net/http"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/query"
	"github.com/govkit/govkit/notify/subscription"
)

// recordPtr is a pointer to a notify record type.
type recordPtr[T any] interface {
	*T
	notify.Record
}

// crud serves the plain create/read/update/delete operations the original
// gives configurations and bounces (and, in parts, administrators).
type crud[T any, P recordPtr[T]] struct {
	coll   *mongostore.Collection[T, P]
	schema *query.Schema
	// prepare checks or adjusts a record before it is written (create,
	// replace, patch, and each record of a bulk patch); cur is the record
	// as stored, nil on create. nil means nothing to do.
	prepare func(r *http.Request, rec, cur P) error
	// checkBulk checks what a bulk patch would make of the records it
	// changes, taken together (uniqueness across them); nil: nothing.
	checkBulk func(r *http.Request, next []P, ids []notify.ID) error
}

// routes registers the operations under base ("/configurations") for
// roles, documenting them under tag with the record name.
func (c *crud[T, P]) routes(s *Server, base, tag, name string, roles []notify.Role) {
	s.handle(route{method: "POST", path: base, roles: roles, tag: tag, summary: "create a " + tag, body: name, response: name, h: c.create})
	s.handle(route{method: "GET", path: base + "/count", roles: roles, tag: tag, summary: "count " + tag + "s", params: []param{whereParam}, response: "count", h: c.count})
	s.handle(route{method: "GET", path: base, roles: roles, tag: tag, summary: "get " + tag + "s", params: []param{filterParam}, response: "[]" + name, h: c.list})
	s.handle(route{method: "PATCH", path: base, roles: roles, tag: tag, summary: "update " + tag + "s selected by where", params: []param{whereParam}, body: "object", response: "count", h: c.patchWhere})
	s.handle(route{method: "GET", path: base + "/{id}", roles: roles, tag: tag, summary: "get a " + tag + " by id", params: []param{pathID, filterParam}, response: name, h: c.get})
	s.handle(route{method: "PATCH", path: base + "/{id}", roles: roles, tag: tag, summary: "update a " + tag + " by id", body: "object", status: http.StatusNoContent, h: c.patch})
	s.handle(route{method: "PUT", path: base + "/{id}", roles: roles, tag: tag, summary: "replace a " + tag + " by id", body: name, status: http.StatusNoContent, h: c.replace})
	s.handle(route{method: "DELETE", path: base + "/{id}", roles: roles, tag: tag, summary: "delete a " + tag + " by id", status: http.StatusNoContent, h: c.delete})
}

// stamp records the caller: a new record gets createdBy only (the
// original's create sets no updatedBy: a record nobody changed has none),
// a change gets updatedBy.
func stamp(r *http.Request, f *notify.Fields, create bool) {
	p := caller(r).Fields()
	if create {
		f.Set("createdBy", p)
		f.Delete("updatedBy")
		return
	}
	f.Set("updatedBy", p)
}

func (c *crud[T, P]) decode(r *http.Request, f notify.Fields, cur P) (P, error) {
	rec := P(new(T))
	if err := rec.SetFields(f); err != nil {
		return nil, err
	}
	if c.prepare != nil {
		if err := c.prepare(r, rec, cur); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

func (c *crud[T, P]) create(w http.ResponseWriter, r *http.Request) {
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	f.Delete("id")
	f.Delete("created")
	f.Delete("updated")
	stamp(r, &f, true)
	rec, err := c.decode(r, f, nil)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := c.coll.Insert(r.Context(), rec); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (c *crud[T, P]) count(w http.ResponseWriter, r *http.Request) {
	r = scanLimited(r)
	where, err := query.ParseWhere(r.URL.Query(), c.schema)
	if err != nil {
		writeError(w, r, err)
		return
	}
	n, err := c.coll.Count(r.Context(), orEmpty(where))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

func (c *crud[T, P]) list(w http.ResponseWriter, r *http.Request) {
	r = scanLimited(r)
	flt, err := query.ParseFilter(r.URL.Query(), c.schema)
	if err != nil {
		writeError(w, r, err)
		return
	}
	recs, err := c.coll.Find(r.Context(), findQuery(flt, nil))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeRecords(w, r, recs, flt.Fields, nil)
}

func (c *crud[T, P]) get(w http.ResponseWriter, r *http.Request) {
	flt, err := query.ParseFilter(r.URL.Query(), c.schema)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := notify.ParseID(r.PathValue("id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	rec, err := c.coll.FindOne(r.Context(), mongostore.Query{Filter: bson.D{{Key: "_id", Value: id}}, Projection: flt.Fields})
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := project(rec, flt.Fields)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// patchWhere is the bulk update: the body's fields are set on every record
// where selects; the answer is {count}. Each record is checked as a PATCH
// by id would check it (the body merged over the record, decoded strictly,
// prepared), and the records together by checkBulk, before anything is
// written: one refused record refuses the update, naming the record and
// the field, and nothing is written.
func (c *crud[T, P]) patchWhere(w http.ResponseWriter, r *http.Request) {
	where, err := query.ParseWhere(r.URL.Query(), c.schema)
	if err != nil {
		writeError(w, r, err)
		return
	}
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, k := range []string{"id", "_id", "created", "createdBy"} {
		f.Delete(k)
	}
	for _, e := range f {
		if strings.HasPrefix(e.Key, "$") {
			writeError(w, r, httpError(http.StatusBadRequest, "update operators are not allowed in the body: "+e.Key))
			return
		}
	}
	stamp(r, &f, false)
	set, err := c.typedSet(f)
	if err != nil {
		writeError(w, r, err)
		return
	}
	recs, err := c.coll.Find(r.Context(), mongostore.Query{Filter: orEmpty(where)})
	if err != nil {
		writeError(w, r, err)
		return
	}
	next := make([]P, len(recs))
	ids := make([]notify.ID, len(recs))
	for i, cur := range recs {
		fields := cur.Fields()
		id, _ := fields.Get("id")
		ids[i], _ = id.(notify.ID)
		if next[i], err = c.decode(r, fields.Merge(f), cur); err != nil {
			writeError(w, r, bulkError{id: ids[i], err: err})
			return
		}
	}
	if c.checkBulk != nil {
		if err := c.checkBulk(r, next, ids); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if len(ids) == 0 {
		writeJSON(w, http.StatusOK, map[string]int64{"count": 0})
		return
	}
	in := make(bson.A, len(ids))
	for i, id := range ids {
		in[i] = id
	}
	n, err := c.coll.UpdateMany(r.Context(), bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}}, bson.D{{Key: "$set", Value: set}})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

// bulkError is a refusal of one record of a bulk update: the message names
// the record, the status is the refusal's.
type bulkError struct {
	id  notify.ID
	err error
}

func (e bulkError) Error() string { return "record " + e.id.Hex() + ": " + e.err.Error() }

func (e bulkError) Unwrap() error { return e.err }

func (e bulkError) StatusCode() int {
	status, _ := classify(e.err)
	return status
}

// typedSet returns the fields of a partial body to $set, typed as stored
// (dates as dates). The body was checked against each record it changes.
func (c *crud[T, P]) typedSet(f notify.Fields) (notify.Fields, error) {
	rec := P(new(T))
	if err := rec.SetFields(f); err != nil {
		return nil, err
	}
	typed := map[string]any{}
	for _, e := range rec.Fields() {
		typed[e.Key] = e.Value
	}
	set := make(notify.Fields, 0, len(f))
	for _, e := range f {
		if v, ok := typed[e.Key]; ok {
			set = append(set, notify.Field{Key: e.Key, Value: v})
		} else {
			set = append(set, e)
		}
	}
	return set, nil
}

func (c *crud[T, P]) patch(w http.ResponseWriter, r *http.Request) {
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	cur, err := c.coll.FindByID(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	merged := cur.Fields()
	for _, k := range []string{"id", "_id", "created", "createdBy"} {
		f.Delete(k)
	}
	stamp(r, &f, false)
	merged = merged.Merge(f)
	rec, err := c.decode(r, merged, cur)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := c.coll.Replace(r.Context(), rec); err != nil {
		writeError(w, r, err)
		return
	}
	noContent(w)
}

func (c *crud[T, P]) replace(w http.ResponseWriter, r *http.Request) {
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	cur, err := c.coll.FindByID(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, k := range []string{"_id", "created", "createdBy", "updated"} {
		f.Delete(k)
	}
	stamp(r, &f, false)
	curF := cur.Fields()
	id, _ := curF.Get("id")
	f.Set("id", id)
	if v, ok := curF.Get("created"); ok {
		f.Set("created", v)
	}
	if v, ok := curF.Get("createdBy"); ok {
		f.Set("createdBy", v)
	}
	rec, err := c.decode(r, f, cur)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := c.coll.Replace(r.Context(), rec); err != nil {
		writeError(w, r, err)
		return
	}
	noContent(w)
}

func (c *crud[T, P]) delete(w http.ResponseWriter, r *http.Request) {
	if err := c.coll.DeleteByID(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, r, err)
		return
	}
	noContent(w)
}

// scanLimited marks a list or count request so that a filter no index
// answers is refused (400, naming the fast filters) rather than read
// over a large collection: a page view must not cost a scan of a million
// records (mongostore.WithScanLimit).
func scanLimited(r *http.Request) *http.Request {
	return r.WithContext(mongostore.WithScanLimit(r.Context(), mongostore.DefaultScanLimit))
}

func orEmpty(d bson.D) bson.D {
	if d == nil {
		return bson.D{}
	}
	return d
}

func findQuery(f *query.Filter, extra bson.D) mongostore.Query {
	return mongostore.Query{Filter: subscription.And(f.Where, extra), Sort: f.Order, Skip: f.Skip, Limit: f.Limit, Projection: f.Fields}
}

// writeRecords answers a list, showing only projected fields when the
// filter had fields, and passing each record through adjust (e.g. to strip
// fields for non-admins).
//
// The array is written element by element: json.Marshal of a []Fields
// would check and compact every element's MarshalJSON output a second time.
func writeRecords[P any](w http.ResponseWriter, r *http.Request, recs []P, fields bson.D, adjust func(notify.Fields) notify.Fields) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, rec := range recs {
		f, err := project(rec, fields)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if adjust != nil {
			f = adjust(f)
		}
		b, err := f.MarshalJSON()
		if err != nil {
			writeError(w, r, err)
			return
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// project returns the API form of rec limited to a projection: only the
// included fields (id unless excluded), or all but the excluded ones.
func project(rec any, fields bson.D) (notify.Fields, error) {
	f, err := toFields(rec)
	if err != nil || len(fields) == 0 {
		return f, err
	}
	include := map[string]bool{}
	exclude := map[string]bool{}
	idShown := true
	for _, e := range fields {
		top, _, _ := strings.Cut(e.Key, ".")
		if top == "_id" {
			top = "id"
		}
		on := truthy(e.Value)
		if n, ok := e.Value.(int32); ok {
			on = n != 0
		}
		if n, ok := e.Value.(int64); ok {
			on = n != 0
		}
		if top == "id" {
			idShown = on
			continue
		}
		if on {
			include[top] = true
		} else {
			exclude[top] = true
		}
	}
	out := notify.Fields{}
	for _, e := range f {
		switch {
		case e.Key == "id":
			if !idShown {
				continue
			}
		case len(include) > 0:
			if !include[e.Key] {
				continue
			}
		case exclude[e.Key]:
			continue
		}
		out = append(out, e)
	}
	return out, nil
}
