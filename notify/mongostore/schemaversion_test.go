package mongostore_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/mongostore"
)

// The dbSchemaVersion configuration record is kept as the original's
// primary keeps it: made when missing, raised from an older minor version
// of the same major one, and left alone when it is newer or of another
// major version (a database that goes back to NotifyBC keeps its record).
func TestRecordSchemaVersionKeepsTheOriginalsRecord(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		value := func() any {
			t.Helper()
			recs, err := s.Configurations().Find(ctx, mongostore.Query{Filter: bson.D{{Key: "name", Value: mongostore.SchemaVersionName}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 {
				t.Fatalf("%d dbSchemaVersion records, want 1", len(recs))
			}
			if recs[0].ServiceName != "" {
				t.Errorf("dbSchemaVersion has serviceName %q", recs[0].ServiceName)
			}
			return recs[0].Value
		}
		set := func(v string) {
			t.Helper()
			if _, err := s.Configurations().UpdateMany(ctx, bson.D{{Key: "name", Value: mongostore.SchemaVersionName}}, bson.D{{Key: "$set", Value: bson.D{{Key: "value", Value: v}}}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			name, before string
			want         any
		}{
			{"made when missing", "", "0.9.0"},
			{"kept when current", "0.9.0", "0.9.0"},
			{"raised from an older minor version", "0.0.0", "0.9.0"},
			{"raised from an older minor version, other patch", "0.8.3", "0.9.0"},
			{"a newer minor version is left alone", "0.10.0", "0.10.0"},
			{"another major version is left alone", "1.0.0", "1.0.0"},
			{"a value that is no version is left alone", "unknown", "unknown"},
		} {
			t.Run(c.name, func(t *testing.T) {
				if c.before != "" {
					set(c.before)
				}
				if err := s.RecordSchemaVersion(ctx); err != nil {
					t.Fatal(err)
				}
				if got := value(); got != c.want {
					t.Errorf("value %v, want %v", got, c.want)
				}
			})
		}
		// Twice in a row (two primaries, one after the other) is one record.
		if err := s.RecordSchemaVersion(ctx); err != nil {
			t.Fatal(err)
		}
		_ = value()
	})
}
