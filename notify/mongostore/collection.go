package mongostore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
)

// Query selects records. Filter, Sort and Projection are documents given as
// bson.D, bson.M, map[string]any or notify.Fields, nil meaning none; "id"
// stands for "_id" in all three, and string values on ObjectId and date
// fields are cast as the original's schema casts them.
//
// Sort values are 1/-1 or "asc"/"desc". A projected query returns records
// whose unselected fields are zero and whose defaults are not applied; the
// API must show only the selected fields, as the original does.
type Query struct {
	Filter     any
	Sort       any
	Skip       int64
	Limit      int64 // 0 means no limit
	Projection any
}

// recordPtr is a pointer to a notify record type.
type recordPtr[T any] interface {
	*T
	notify.Record
}

// Collection is one collection of records of type T.
type Collection[T any, P recordPtr[T]] struct {
	s      *Store
	c      *mongo.Collection
	schema *schema
}

func newCollection[T any, P recordPtr[T]](s *Store, sch *schema) *Collection[T, P] {
	return &Collection[T, P]{s: s, c: s.db.Collection(sch.name), schema: sch}
}

// Name returns the collection name.
func (c *Collection[T, P]) Name() string { return c.schema.name }

// idValue converts an id from a URL. A malformed ObjectId cannot match any
// record: ErrNotFound.
func (c *Collection[T, P]) idValue(id string) (any, error) {
	if c.schema.stringID {
		if id == "" {
			return nil, notify.ErrNotFound
		}
		return id, nil
	}
	oid, err := bson.ObjectIDFromHex(id)
	if err != nil {
		return nil, fmt.Errorf("%s id %q: %w", c.schema.name, id, notify.ErrNotFound)
	}
	return oid, nil
}

func (c *Collection[T, P]) decode(raw bson.Raw, defaults bool) (P, error) {
	f, err := fromRaw(raw)
	if err != nil {
		return nil, fmt.Errorf("mongostore: %s: %w", c.schema.name, err)
	}
	if c.s.idOnlyQueries {
		for _, k := range c.schema.nullWhenMissing {
			if v, ok := f.Get(k); ok && v == nil {
				f.Delete(k)
			}
		}
	}
	rec := P(new(T))
	rec.LoadFields(f)
	if defaults {
		rec.ApplyDefaults()
	}
	return rec, nil
}

// writeDoc is the stored form of rec: created and updated stamped when
// unset, a new ObjectId when the record has none.
func (c *Collection[T, P]) writeDoc(f notify.Fields, replace bool) bson.D {
	now := c.s.now()
	if !f.Has("created") && !replace {
		f.Set("created", now)
	}
	if replace || !f.Has("updated") {
		f.Set("updated", now)
	}
	doc := recordDoc(f)
	if !replace && !c.schema.stringID && !f.Has("id") {
		doc = append(bson.D{{Key: "_id", Value: bson.NewObjectID()}}, doc...)
	}
	if c.schema.onWrite != nil {
		doc = c.schema.onWrite(doc)
	}
	if c.s.idOnlyQueries {
		for _, k := range c.schema.nullWhenMissing {
			if !f.Has(k) {
				doc = append(doc, bson.E{Key: k, Value: nil})
			}
		}
	}
	return doc
}

// castUpdate is the schema's castUpdate plus, on the embedded store, $unset
// of a nullWhenMissing field turned into a $set to null.
func (c *Collection[T, P]) castUpdate(update any) (bson.D, error) {
	u, err := c.schema.castUpdate(update, c.s.now())
	if err != nil || !c.s.idOnlyQueries || len(c.schema.nullWhenMissing) == 0 {
		return u, err
	}
	for i, e := range u {
		if e.Key != "$unset" {
			continue
		}
		unset, err := asDoc(e.Value)
		if err != nil {
			return nil, err
		}
		kept := bson.D{}
		for _, x := range unset {
			if slices.Contains(c.schema.nullWhenMissing, x.Key) {
				u[0].Value = append(u[0].Value.(bson.D), bson.E{Key: x.Key, Value: nil})
				continue
			}
			kept = append(kept, x)
		}
		u[i].Value = kept
	}
	// An empty $unset is refused by the server.
	out := u[:0]
	for _, e := range u {
		if d, ok := e.Value.(bson.D); ok && e.Key == "$unset" && len(d) == 0 {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// Insert stores a new record and updates rec with what was stored: its id
// (a new ObjectId unless set; access tokens must bring their own) and its
// created and updated dates (now unless set). Defaults are applied first.
func (c *Collection[T, P]) Insert(ctx context.Context, rec P) error {
	ctx, cancel := call(ctx)
	defer cancel()
	rec.ApplyDefaults()
	if c.schema.stringID && !rec.Fields().Has("id") {
		return fmt.Errorf("mongostore: %s: a record needs its id", c.schema.name)
	}
	doc := c.writeDoc(rec.Fields(), false)
	if _, err := c.c.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("mongostore: insert %s: %w", c.schema.name, mapErr(err))
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		return err
	}
	stored, err := c.decode(raw, true)
	if err != nil {
		return err
	}
	*rec = *stored
	return nil
}

// InsertMany stores new records in bulk, as Insert does one by one (ids
// and dates assigned, defaults applied, recs updated), in round trips of
// up to 1,000 records: for loading many records at once.
func (c *Collection[T, P]) InsertMany(ctx context.Context, recs []P) error {
	for start := 0; start < len(recs); start += 1000 {
		batch := recs[start:min(start+1000, len(recs))]
		docs := make([]any, len(batch))
		for i, rec := range batch {
			rec.ApplyDefaults()
			if c.schema.stringID && !rec.Fields().Has("id") {
				return fmt.Errorf("mongostore: %s: a record needs its id", c.schema.name)
			}
			docs[i] = c.writeDoc(rec.Fields(), false)
		}
		bctx, cancel := call(ctx)
		_, err := c.c.InsertMany(bctx, docs)
		cancel()
		if err != nil {
			return fmt.Errorf("mongostore: insert %s: %w", c.schema.name, mapErr(err))
		}
		for i, rec := range batch {
			raw, err := bson.Marshal(docs[i])
			if err != nil {
				return err
			}
			stored, err := c.decode(raw, true)
			if err != nil {
				return err
			}
			*rec = *stored
		}
	}
	return nil
}

// FindByID returns the record with id; an unknown or malformed id is
// notify.ErrNotFound.
func (c *Collection[T, P]) FindByID(ctx context.Context, id string) (P, error) {
	v, err := c.idValue(id)
	if err != nil {
		return nil, err
	}
	return c.findOne(ctx, bson.D{{Key: "_id", Value: v}}, nil, true)
}

// FindOne returns the first record the query selects, or notify.ErrNotFound.
func (c *Collection[T, P]) FindOne(ctx context.Context, q Query) (P, error) {
	q.Limit = 1
	recs, err := c.Find(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, notify.ErrNotFound
	}
	return recs[0], nil
}

func (c *Collection[T, P]) findOne(ctx context.Context, filter bson.D, proj bson.D, defaults bool) (P, error) {
	ctx, cancel := call(ctx)
	defer cancel()
	opts := options.FindOne()
	if proj != nil {
		opts.SetProjection(proj)
	}
	raw, err := c.c.FindOne(ctx, filter, opts).Raw()
	if err != nil {
		return nil, fmt.Errorf("mongostore: %s: %w", c.schema.name, mapErr(err))
	}
	return c.decode(raw, defaults)
}

// Find returns the records the query selects.
func (c *Collection[T, P]) Find(ctx context.Context, q Query) ([]P, error) {
	ctx, cancel := call(ctx)
	defer cancel()
	filter, err := c.schema.castFilter(q.Filter)
	if err != nil {
		return nil, err
	}
	filter = c.textFallback(filter)
	opts := options.Find()
	sort, err := c.schema.castSort(q.Sort)
	if err != nil {
		return nil, err
	}
	if len(sort) > 0 {
		opts.SetSort(sort)
	}
	if q.Skip > 0 {
		opts.SetSkip(q.Skip)
	}
	if q.Limit > 0 {
		opts.SetLimit(q.Limit)
	}
	proj, err := c.schema.castProjection(q.Projection)
	if err != nil {
		return nil, err
	}
	if len(proj) > 0 {
		opts.SetProjection(proj)
	}
	recs, err := c.findByIndex(ctx, filter, sort, q.Skip, q.Limit, proj)
	if !errors.Is(err, errNoPlan) {
		return recs, err
	}
	if c.useLookup(filter) {
		recs, err := c.findByLookup(ctx, filter, sort, q.Skip, q.Limit, proj)
		if !errors.Is(err, errNoPlan) {
			return recs, err
		}
	}
	if c.scans(filter) {
		if err := c.checkScan(ctx); err != nil {
			return nil, err
		}
	}
	cur, err := c.c.Find(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("mongostore: find %s: %w", c.schema.name, mapErr(err))
	}
	defer cur.Close(context.WithoutCancel(ctx))
	out := []P{}
	for cur.Next(ctx) {
		rec, err := c.decode(cur.Current, len(proj) == 0)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("mongostore: find %s: %w", c.schema.name, mapErr(err))
	}
	return out, nil
}

// Count counts the records filter selects.
func (c *Collection[T, P]) Count(ctx context.Context, filter any) (int64, error) {
	ctx, cancel := call(ctx)
	defer cancel()
	f, err := c.schema.castFilter(filter)
	if err != nil {
		return 0, err
	}
	f = c.textFallback(f)
	n, err := c.countByIndex(ctx, f)
	if !errors.Is(err, errNoPlan) {
		return n, err
	}
	if c.useLookup(f) {
		n, err := c.countByLookup(ctx, f)
		if !errors.Is(err, errNoPlan) {
			return n, err
		}
	}
	if c.scans(f) {
		if err := c.checkScan(ctx); err != nil {
			return 0, err
		}
	}
	n, err = c.c.CountDocuments(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("mongostore: count %s: %w", c.schema.name, mapErr(err))
	}
	return n, nil
}

// UpdateByID applies update to the record with id: an update document with
// operators ($set, $unset, $inc, $addToSet, $push, $pull); fields given
// without an operator are set. updated is stamped now unless the update
// sets it; id and created never change. Unknown id: notify.ErrNotFound.
func (c *Collection[T, P]) UpdateByID(ctx context.Context, id string, update any) error {
	ctx, cancel := call(ctx)
	defer cancel()
	v, err := c.idValue(id)
	if err != nil {
		return err
	}
	u, err := c.castUpdate(update)
	if err != nil {
		return err
	}
	res, err := c.c.UpdateOne(ctx, bson.D{{Key: "_id", Value: v}}, u)
	if err != nil {
		return fmt.Errorf("mongostore: update %s: %w", c.schema.name, mapErr(err))
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("%s id %q: %w", c.schema.name, id, notify.ErrNotFound)
	}
	return nil
}

// UpdateMany applies update (as UpdateByID) to every record filter selects
// and returns how many were modified, which is the count the original's
// bulk PATCH answers.
func (c *Collection[T, P]) UpdateMany(ctx context.Context, filter, update any) (int64, error) {
	ctx, cancel := call(ctx)
	defer cancel()
	f, err := c.schema.castFilter(filter)
	if err != nil {
		return 0, err
	}
	u, err := c.castUpdate(update)
	if err != nil {
		return 0, err
	}
	if c.useLookup(f) {
		n, err := c.updateByLookup(ctx, f, u)
		if !errors.Is(err, errNoPlan) {
			return n, err
		}
	}
	res, err := c.c.UpdateMany(ctx, f, u)
	if err != nil {
		return 0, fmt.Errorf("mongostore: update %s: %w", c.schema.name, mapErr(err))
	}
	return res.ModifiedCount, nil
}

// FindOneAndUpdate applies update to the first record filter selects (in
// sort order) and returns the record as updated, or notify.ErrNotFound. It
// is atomic, for state changes that must happen once (such as taking over
// a stale broadcast).
func (c *Collection[T, P]) FindOneAndUpdate(ctx context.Context, filter, sort, update any) (P, error) {
	ctx, cancel := call(ctx)
	defer cancel()
	f, err := c.schema.castFilter(filter)
	if err != nil {
		return nil, err
	}
	u, err := c.castUpdate(update)
	if err != nil {
		return nil, err
	}
	opts := options.FindOneAndUpdate().SetReturnDocument(options.After)
	srt, err := c.schema.castSort(sort)
	if err != nil {
		return nil, err
	}
	if len(srt) > 0 {
		opts.SetSort(srt)
	}
	raw, err := c.c.FindOneAndUpdate(ctx, f, u, opts).Raw()
	if err != nil {
		return nil, fmt.Errorf("mongostore: update %s: %w", c.schema.name, mapErr(err))
	}
	return c.decode(raw, true)
}

// Replace replaces the stored record with rec's id by rec, keeping the
// stored created (and createdBy) when rec has none and stamping updated
// now. Unknown id: notify.ErrNotFound. rec is updated with what was stored.
func (c *Collection[T, P]) Replace(ctx context.Context, rec P) error {
	ctx, cancel := call(ctx)
	defer cancel()
	rec.ApplyDefaults()
	f := rec.Fields()
	idv, _ := f.Get("id")
	var id string
	switch x := idv.(type) {
	case notify.ID:
		id = x.Hex()
	case string:
		id = x
	}
	v, err := c.idValue(id)
	if err != nil {
		return err
	}
	old, err := c.findOne(ctx, bson.D{{Key: "_id", Value: v}}, bson.D{{Key: "created", Value: 1}, {Key: "createdBy", Value: 1}}, false)
	if err != nil {
		return err
	}
	oldFields := old.Fields()
	for _, k := range []string{"created", "createdBy"} {
		if ov, ok := oldFields.Get(k); ok && !f.Has(k) {
			f.Set(k, ov)
		}
	}
	doc := c.writeDoc(f, true)
	res, err := c.c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: v}}, doc)
	if err != nil {
		return fmt.Errorf("mongostore: replace %s: %w", c.schema.name, mapErr(err))
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("%s id %q: %w", c.schema.name, id, notify.ErrNotFound)
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		return err
	}
	stored, err := c.decode(raw, true)
	if err != nil {
		return err
	}
	*rec = *stored
	return nil
}

// DeleteByID deletes the record with id. Unknown id: notify.ErrNotFound.
func (c *Collection[T, P]) DeleteByID(ctx context.Context, id string) error {
	ctx, cancel := call(ctx)
	defer cancel()
	v, err := c.idValue(id)
	if err != nil {
		return err
	}
	res, err := c.c.DeleteOne(ctx, bson.D{{Key: "_id", Value: v}})
	if err != nil {
		return fmt.Errorf("mongostore: delete %s: %w", c.schema.name, mapErr(err))
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("%s id %q: %w", c.schema.name, id, notify.ErrNotFound)
	}
	return nil
}

// DeleteMany deletes every record filter selects and returns how many.
func (c *Collection[T, P]) DeleteMany(ctx context.Context, filter any) (int64, error) {
	ctx, cancel := call(ctx)
	defer cancel()
	f, err := c.schema.castFilter(filter)
	if err != nil {
		return 0, err
	}
	res, err := c.c.DeleteMany(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("mongostore: delete %s: %w", c.schema.name, mapErr(err))
	}
	return res.DeletedCount, nil
}

// DistinctStrings returns the distinct string values of field among the
// records filter selects, sorted. It reads the field of each record
// instead of using the server's distinct command, which the embedded store
// answers only slowly (with a timeout); values that are not strings are
// ignored.
func (c *Collection[T, P]) DistinctStrings(ctx context.Context, field string, filter any) ([]string, error) {
	ctx, cancel := call(ctx)
	defer cancel()
	f, err := c.schema.castFilter(filter)
	if err != nil {
		return nil, err
	}
	path := c.schema.path(field)
	cur, err := c.c.Find(ctx, f, options.Find().SetProjection(bson.D{{Key: path, Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("mongostore: %s: %w", c.schema.name, mapErr(err))
	}
	defer cur.Close(context.WithoutCancel(ctx))
	seen := map[string]bool{}
	for cur.Next(ctx) {
		v, err := cur.Current.LookupErr(strings.Split(path, ".")...)
		if err != nil {
			continue
		}
		if s, ok := v.StringValueOK(); ok {
			seen[s] = true
		}
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("mongostore: %s: %w", c.schema.name, mapErr(err))
	}
	return slices.Sorted(maps.Keys(seen)), nil
}
