package testsvc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"github.com/jackc/pgx/v5"
)

// RequireFerretDB starts FerretDB (the pinned v1) inside this test process
// as a MongoDB-protocol server on a free loopback port, on a fresh
// PostgreSQL database of this test (RequirePostgres: skipped, or failed
// under GOVKIT_TEST_REQUIRE_SERVICES=1, when PostgreSQL is not there), and
// returns its mongodb:// URI (without a database name). Several processes
// can share it — the nodes of a cluster under test — which the embedded
// store (SQLite in one process) cannot do. It stops when the test ends.
func RequireFerretDB(t testing.TB) string {
	t.Helper()
	uri, _ := RequireFerretDBOnPostgres(t)
	return uri
}

// RequireFerretDBOnPostgres is RequireFerretDB that also returns the URL of
// the PostgreSQL database FerretDB keeps its data in (for tests of
// notify/ferretpg, which reads FerretDB's tables).
func RequireFerretDBOnPostgres(t testing.TB) (mongoURI, postgresURL string) {
	t.Helper()
	pg := RequirePostgres(t)
	indexIDs(t, pg)
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:      ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Handler:       "postgresql",
		PostgreSQLURL: pg,
		// FerretDB logs every refused command as a warning; errors only.
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("testsvc: start FerretDB: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	// Cleanups run last-registered first: FerretDB stops before the
	// database it uses is dropped.
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("testsvc: FerretDB: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("testsvc: FerretDB did not stop")
		}
	})
	return f.MongoDBURI(), pg
}

// indexIDsSQL makes every table FerretDB creates answer its _id lookups
// from an index. FerretDB v1.24's PostgreSQL back end looks a document up
// with _jsonb->'_id' @> '<value>' and indexes _id with a B-tree, which
// cannot serve @>, so every lookup reads (and decompresses) the whole
// table: 2.3 ms among 300 documents of 20 KB, 9.8 ms among 900. A GIN
// index on the same expression serves it. An event trigger adds one to
// each new table that has FerretDB's _jsonb column. FerretDB's statements
// are prepared with the field name as a parameter; custom plans (planned
// with the values) are forced, since a generic plan cannot match the
// index expression.
const indexIDsSQL = `
DO $$ BEGIN
  EXECUTE format('ALTER DATABASE %I SET plan_cache_mode = force_custom_plan', current_database());
END $$;
CREATE FUNCTION govkit_index_ferretdb_ids() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
  obj record;
BEGIN
  FOR obj IN SELECT * FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE TABLE' LOOP
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = obj.objid AND attname = '_jsonb') THEN
      EXECUTE format('CREATE INDEX ON %s USING gin ((_jsonb->''_id'') jsonb_path_ops)', obj.object_identity);
    END IF;
  END LOOP;
END $$;
CREATE EVENT TRIGGER govkit_index_ferretdb_ids ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
  EXECUTE FUNCTION govkit_index_ferretdb_ids();
`

func indexIDs(t testing.TB, pg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatalf("testsvc: FerretDB database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, indexIDsSQL); err != nil {
		t.Fatalf("testsvc: FerretDB database: %v", err)
	}
}
