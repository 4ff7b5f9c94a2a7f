package httpapi_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/httpapi"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// TestEmbeddedStoreIndexesSubscriberLookups: a service on an embedded
// store of its own adds, at start, the SQLite indexes its subscriber
// lookups read (README, "Subscriber lookups on the embedded store").
func TestEmbeddedStoreIndexesSubscriberLookups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := config.New(apitest.TestConfig())
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	app, err := httpapi.OpenApp(ctx, httpapi.AppOptions{Config: cfg, DataDir: data, RSABits: 2048})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(context.Background())
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "notify-db", app.Store.Database()+".sqlite")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'subscription%govkit%'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n[strings.Index(n, "_govkit_"):])
	}
	rows.Close()
	sort.Strings(names)
	// the lookups', then the lists' and counts' (mongostore's schema):
	// the composites, the selective fields, the partial index of
	// documents whose fields break their kinds
	want := "_govkit_c_channel_serviceName_state _govkit_c_created_serviceName_channel_state _govkit_c_serviceName_state_channel _govkit_c_state_channel_serviceName " +
		"_govkit_c_updated_serviceName_channel_state _govkit_c_userChannelId_serviceName_channel_state _govkit_eq_userChannelId _govkit_eq_userId _govkit_fold_userChannelId _govkit_id " +
		"_govkit_odd_217bdb8d _govkit_type_userChannelId _govkit_type_userId"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("indexes %s, want %s", got, want)
	}
}
