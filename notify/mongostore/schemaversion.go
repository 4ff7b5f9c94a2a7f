package mongostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
)

// SchemaVersion is the database schema version of NotifyBC 6.4.1 (its
// package.json's dbSchemaVersion): the indexes this store makes at every
// open are that version's.
const SchemaVersion = "0.9.0"

// SchemaVersionName is the configuration record that holds the database's
// schema version, as the original keeps it (its Configurations page lists
// it, and its health check counts it among the configuration records).
const SchemaVersionName = "dbSchemaVersion"

// RecordSchemaVersion keeps the dbSchemaVersion configuration record as
// the original's primary does at start: made when missing, and raised to
// SchemaVersion when it has the same major version and a lower minor one
// (the original then syncs its indexes, which Open has made already). A
// version this store does not know to be older — a newer NotifyBC's, or a
// value that is not major.minor.patch — is left as it is, as the original
// leaves it, so that a database moved back to NotifyBC keeps its record.
// Only the primary (or a single node) calls it.
func (s *Store) RecordSchemaVersion(ctx context.Context) error {
	configs := s.Configurations()
	rec, err := configs.FindOne(ctx, Query{Filter: bson.D{{Key: "name", Value: SchemaVersionName}}})
	switch {
	case errors.Is(err, notify.ErrNotFound):
		err = configs.Insert(ctx, &notify.Configuration{Name: SchemaVersionName, Value: SchemaVersion})
		if err != nil && !errors.Is(err, notify.ErrDuplicate) { // another primary made it meanwhile
			return fmt.Errorf("record %s: %w", SchemaVersionName, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", SchemaVersionName, err)
	}
	current, _ := rec.Value.(string)
	if !olderMinor(current, SchemaVersion) {
		return nil
	}
	if err := configs.UpdateByID(ctx, rec.ID.Hex(), bson.D{{Key: "$set", Value: bson.D{{Key: "value", Value: SchemaVersion}}}}); err != nil {
		return fmt.Errorf("record %s: %w", SchemaVersionName, err)
	}
	return nil
}

// olderMinor reports whether version a has the same major version as b
// and a lower minor one: the original's condition for syncing its indexes
// and raising the record.
func olderMinor(a, b string) bool {
	am, an, ok1 := majorMinor(a)
	bm, bn, ok2 := majorMinor(b)
	return ok1 && ok2 && am == bm && an < bn
}

func majorMinor(v string) (major, minor int, ok bool) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) != 3 {
		return 0, 0, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return 0, 0, false
		}
		n[i] = x
	}
	return n[0], n[1], true
}
