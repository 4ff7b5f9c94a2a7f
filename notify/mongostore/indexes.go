package mongostore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
)

type indexSpec struct {
	Name   string
	Keys   bson.D
	Unique bool
	Text   bool
}

// IndexAction is what [Store.EnsureIndexes] did about one index.
type IndexAction string

// Index actions.
const (
	// IndexCreated: the index was missing and has been created.
	IndexCreated IndexAction = "created"
	// IndexPresent: an index with the same keys and options exists (under
	// this or another name).
	IndexPresent IndexAction = "present"
	// IndexKeptDifferent: an index with the same name or keys exists with
	// other options; it is left alone (and logged), never a start-up failure.
	IndexKeptDifferent IndexAction = "kept-different"
	// IndexUnsupported: the server cannot build this kind of index (the
	// embedded store and text indexes); the service works without it.
	IndexUnsupported IndexAction = "unsupported"
	// IndexFailed: the server refused the index, e.g. because stored data
	// breaks its uniqueness; logged as an error, the service still starts.
	IndexFailed IndexAction = "failed"
)

// IndexReport says what happened to one index.
type IndexReport struct {
	Collection string
	Name       string
	Action     IndexAction
	Detail     string
}

// EnsureIndexes creates the original's indexes (and ours) where they are
// missing. Existing indexes are never changed or dropped: one with the
// same name or keys but other options is left alone and logged. Only a
// failure to talk to the server is an error; everything else is reported
// and logged, so a deployment with hand-made indexes still starts.
//
// Before the administrator email index it fills the lower-cased email key
// of administrators written by the original, which lacks it. Every
// collection the service uses is created first if missing, so that the
// embedded store can index all of them at start (see
// embeddedmongo.Server.IndexIDs).
func (s *Store) EnsureIndexes(ctx context.Context) ([]IndexReport, error) {
	if err := s.ensureCollections(ctx); err != nil {
		return nil, err
	}
	if err := s.backfillEmailKeys(ctx); err != nil {
		return nil, err
	}
	var reports []IndexReport
	var unsupported []string
	for _, sch := range allSchemas {
		specs := sch.indexes
		if s.fieldIndex == nil {
			// With a field index (the embedded store) the composites are
			// SQLite indexes of ours; FerretDB on SQLite would never use
			// them as its own, only keep them up to date.
			specs = sch.serverIndexes()
		}
		if len(specs) == 0 {
			continue
		}
		existing, err := s.listIndexes(ctx, sch.name)
		if err != nil {
			return reports, err
		}
		for _, spec := range specs {
			if spec.Text && s.ferretDB {
				// FerretDB v1 has no text indexes: nothing to try or
				// to say at every start.
				reports = append(reports, IndexReport{Collection: sch.name, Name: spec.Name, Action: IndexUnsupported, Detail: "FerretDB has no text indexes"})
				continue
			}
			r := s.ensureIndex(ctx, sch.name, spec, existing)
			if ctx.Err() != nil {
				return reports, ctx.Err()
			}
			reports = append(reports, r)
			if r.Action == IndexUnsupported {
				unsupported = append(unsupported, sch.name+"."+spec.Name)
				continue
			}
			s.logIndex(ctx, r)
		}
	}
	if len(unsupported) > 0 {
		// One line for all of them: the same few are skipped at every start.
		s.log.InfoContext(ctx, "notify storage: indexes not supported by this server, skipped", slog.String("indexes", strings.Join(unsupported, ", ")))
	}
	return reports, nil
}

// ensureCollections creates the service's collections that are missing.
func (s *Store) ensureCollections(ctx context.Context) error {
	have, err := s.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("mongostore: list collections: %w", err)
	}
	names := []string{notify.CollNotificationBroadcast, notify.CollNotificationBroadcastChunk, notify.CollNotificationBroadcastResult}
	for _, sch := range allSchemas {
		names = append(names, sch.name)
	}
	for _, name := range names {
		if slices.Contains(have, name) {
			continue
		}
		err := s.db.CreateCollection(ctx, name)
		var ce mongo.CommandError
		if err != nil && !(errors.As(err, &ce) && ce.Code == 48) { // NamespaceExists: another node was first
			return fmt.Errorf("mongostore: create collection %s: %w", name, err)
		}
	}
	return nil
}

func (s *Store) logIndex(ctx context.Context, r IndexReport) {
	attrs := []any{slog.String("collection", r.Collection), slog.String("index", r.Name), slog.String("action", string(r.Action))}
	if r.Detail != "" {
		attrs = append(attrs, slog.String("detail", r.Detail))
	}
	switch r.Action {
	case IndexCreated:
		s.log.InfoContext(ctx, "notify storage: index created", attrs...)
	case IndexPresent:
		s.log.DebugContext(ctx, "notify storage: index present", attrs...)
	case IndexKeptDifferent:
		s.log.WarnContext(ctx, "notify storage: existing index has other options; left alone", attrs...)
	default:
		s.log.ErrorContext(ctx, "notify storage: index could not be created", attrs...)
	}
}

type existingIndex struct {
	name   string
	key    bson.D
	unique bool
	other  []string // option names beyond key, name, v, unique, background
}

func (s *Store) listIndexes(ctx context.Context, coll string) ([]existingIndex, error) {
	cur, err := s.db.Collection(coll).Indexes().List(ctx)
	if err != nil {
		var ce mongo.CommandError
		if errors.As(err, &ce) && ce.Code == 26 { // NamespaceNotFound
			return nil, nil
		}
		return nil, fmt.Errorf("mongostore: list indexes of %s: %w", coll, err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var out []existingIndex
	for cur.Next(ctx) {
		var doc bson.D
		if err := cur.Decode(&doc); err != nil {
			return nil, err
		}
		var ix existingIndex
		for _, e := range doc {
			switch e.Key {
			case "name":
				ix.name, _ = e.Value.(string)
			case "key":
				ix.key, _ = e.Value.(bson.D)
			case "unique":
				ix.unique, _ = e.Value.(bool)
			case "v", "ns", "background":
			case "weights", "default_language", "language_override", "textIndexVersion":
				// Parts of any text index; not options of their own.
			default:
				ix.other = append(ix.other, e.Key)
			}
		}
		out = append(out, ix)
	}
	return out, cur.Err()
}

func (s *Store) ensureIndex(ctx context.Context, coll string, spec indexSpec, existing []existingIndex) IndexReport {
	r := IndexReport{Collection: coll, Name: spec.Name}
	for _, ix := range existing {
		sameName := ix.name == spec.Name
		sameKey := keysEqual(ix.key, spec)
		if !sameName && !sameKey {
			continue
		}
		switch {
		case sameName && !sameKey:
			r.Action, r.Detail = IndexKeptDifferent, fmt.Sprintf("same name, keys %v", ix.key)
		case ix.unique != spec.Unique || len(ix.other) > 0:
			r.Action = IndexKeptDifferent
			r.Detail = fmt.Sprintf("index %q: unique=%v, other options %v", ix.name, ix.unique, ix.other)
		default:
			r.Action = IndexPresent
			if !sameName {
				r.Detail = "as " + ix.name
			}
		}
		return r
	}
	opts := options.Index().SetName(spec.Name)
	if spec.Unique {
		opts.SetUnique(true)
	}
	_, err := s.db.Collection(coll).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: spec.Keys, Options: opts})
	if err == nil {
		r.Action = IndexCreated
		return r
	}
	r.Detail = err.Error()
	var ce mongo.CommandError
	code := int32(0)
	if errors.As(err, &ce) {
		code = ce.Code
	}
	switch {
	case code == 238 || code == 115 || (spec.Text && code != 0 && code != 11000):
		// NotImplemented / CommandNotSupported: FerretDB's answer to
		// text indexes.
		r.Action = IndexUnsupported
	case code == 85 || code == 86:
		// IndexOptionsConflict / IndexKeySpecsConflict: someone created it
		// differently between our listing and now.
		r.Action = IndexKeptDifferent
	default:
		r.Action = IndexFailed
	}
	return r
}

// serverIndexes are the indexes EnsureIndexes makes on MongoDB and
// FerretDB: the schema's list, then one per composite of the field index
// (named by its fields, ascending) whose keys no index of the list starts
// with. The embedded store's SQLite indexes and the server's are thus the
// same shapes, chosen once for the console's reads: on MongoDB a count
// with equality on any combination of the filter fields is a range of
// one index, and a page sorted by date walks a date-first index whose
// other keys answer the filter without reading documents
// (TestServerIndexesServeTheConsoleReads checks this by MongoDB's rules
// for using an index).
func (sch *schema) serverIndexes() []indexSpec {
	out := slices.Clone(sch.indexes)
next:
	for _, c := range sch.composites {
		for _, ix := range out {
			if !ix.Text && keysStartWith(ix.Keys, c) {
				continue next
			}
		}
		keys := make(bson.D, len(c))
		for i, f := range c {
			keys[i] = bson.E{Key: f, Value: 1}
		}
		out = append(out, indexSpec{Name: strings.Join(c, "_"), Keys: keys})
	}
	return out
}

// keysStartWith: the index keys begin with fields, in that order.
func keysStartWith(keys bson.D, fields []string) bool {
	if len(keys) < len(fields) {
		return false
	}
	for i, f := range fields {
		if keys[i].Key != f {
			return false
		}
	}
	return true
}

// keysEqual compares an existing index's keys with a spec. A text index is
// listed by the server as {_fts: "text", _ftsx: 1}.
func keysEqual(have bson.D, spec indexSpec) bool {
	if spec.Text {
		for _, e := range have {
			if e.Value == "text" {
				return true
			}
		}
		return false
	}
	if len(have) != len(spec.Keys) {
		return false
	}
	for i := range have {
		if have[i].Key != spec.Keys[i].Key || direction(have[i].Value) != direction(spec.Keys[i].Value) {
			return false
		}
	}
	return true
}

func direction(v any) any {
	switch n := v.(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return v
}

// backfillEmailKeys sets the lower-cased email key on administrators that
// lack it (written by the original), one by one: administrators are few,
// and the embedded store has no pipeline updates.
func (s *Store) backfillEmailKeys(ctx context.Context) error {
	coll := s.db.Collection(notify.CollAdministrator)
	cur, err := coll.Find(ctx, bson.D{{Key: emailKeyField, Value: bson.D{{Key: "$exists", Value: false}}}},
		options.Find().SetProjection(bson.D{{Key: "email", Value: 1}}))
	if err != nil {
		return fmt.Errorf("mongostore: administrators: %w", err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	for cur.Next(ctx) {
		var doc struct {
			ID    any `bson:"_id"`
			Email any `bson:"email"`
		}
		if err := cur.Decode(&doc); err != nil {
			return err
		}
		email, ok := doc.Email.(string)
		if !ok {
			continue
		}
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: doc.ID}},
			bson.D{{Key: "$set", Value: bson.D{{Key: emailKeyField, Value: notify.EmailKey(email)}}}})
		if err != nil {
			return fmt.Errorf("mongostore: administrators: %w", err)
		}
	}
	return cur.Err()
}
