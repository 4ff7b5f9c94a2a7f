package mongostore_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/embeddedmongo"
	"github.com/govkit/govkit/notify/mongostore"
)

// embeddedURI is the one embedded store all tests of the package share;
// each test works in a database of its own (one SQLite file).
var (
	embeddedURI string
	embedded    *embeddedmongo.Server
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mongostore-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := embeddedmongo.Start(context.Background(), embeddedmongo.Config{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	embeddedURI, embedded = srv.URI(), srv
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// eachStore runs fn against the embedded store and, when
// GOVKIT_TEST_MONGODB_URI is set, against MongoDB: the one suite both must
// pass. Each run gets a fresh database, dropped afterwards.
func eachStore(t *testing.T, fn func(t *testing.T, s *mongostore.Store)) {
	t.Helper()
	t.Run("embedded", func(t *testing.T) {
		fn(t, openStore(t, embeddedURI, nil))
	})
	t.Run("mongodb", func(t *testing.T) {
		fn(t, openStore(t, testsvc.MongoURI(t), nil))
	})
}

// storeURI returns the URI a test's store was opened with.
func storeURI(t *testing.T) string {
	if strings.HasSuffix(t.Name(), "/embedded") || strings.Contains(t.Name(), "/embedded/") {
		return embeddedURI
	}
	return testsvc.MongoURI(t)
}

// rawDB opens the store's database with the driver alone, to see and write
// documents as the original would have stored them.
func rawDB(t *testing.T, s *mongostore.Store) *mongo.Database {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(storeURI(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client.Database(s.Database())
}

func openStore(t *testing.T, uri string, logger *slog.Logger) *mongostore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := strings.ReplaceAll(testsvc.Unique("nb_"+t.Name()), "/", "_")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s, err := mongostore.Open(ctx, uri, mongostore.Options{Database: name, Logger: logger})
	if err != nil {
		t.Fatalf("open %s: %v", uri, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.DropDatabase(ctx); err != nil {
			t.Errorf("drop database: %v", err)
		}
		if err := s.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// testLog sends the store's log to the test's log, shown only on failure.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
