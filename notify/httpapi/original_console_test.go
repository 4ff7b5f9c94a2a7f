package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// The original's own web console (NotifyBC 6.4.1's client/, a Vue build)
// is not built here: its toolchain (Vite, vue-tsc, Vuetify and some 500
// npm packages of its lock file) would add minutes and a second Node tree
// to every CI run. Instead this is every request it makes, read from its
// source (client/src/store/index.js, components/shared/combo-table.vue,
// components/shared/editor.vue, login.vue, notifications.vue,
// api-explorer.vue), replayed against govkit with the statuses and shapes
// the console's code relies on:
//
//   - a page (combo-table, one per model) lists with
//     GET /api/{model}?filter={"limit":10,"skip":0} when the table first
//     asks (v-data-table-server's options: 10 per page), then
//     GET /api/{model}/count; paging adds skip, a column header sorts with
//     "order":[[key,"asc"|"desc"]], "All" per page drops limit; the search
//     box sends where {"$text":{"$search":TEXT}} (or the JSON it parses as
//     an object) with skip 0, and the count gets ?where= with the same
//     where; every list keeps the filter before it and adds to it;
//   - the editor POSTs /api/{model} a new item, PUTs /api/{model}/{id} an
//     edited one (the item as listed, without id, created and updated),
//     then lists again with filter {}; delete is DELETE /api/{model}/{id};
//   - the console asks GET /api/administrators/whoami on every page (the
//     top bar), POST /api/administrators/login with tokenName "webConsole"
//     and ttl 43200, then sends the token as the bare Authorization header;
//   - the notification editor's service name completes from
//     GET /api/subscriptions/services;
//   - the API Explorer page frames /api/explorer in a same-origin iframe
//     and adds a style element to its document.
//
// The console treats any status but 2xx as a failure and reads lists as
// arrays and counts as {count}.
func TestOriginalConsoleRequests(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	// What the pages list: one of each, as the demo world of dev has.
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "roads", "channel": "email", "userChannelId": "a@invalid.local", "state": "confirmed"})
	seed(t, e, "/api/notifications", map[string]any{"serviceName": "roads", "channel": "in-app", "isBroadcast": true, "message": map[string]any{"title": "Main Street closed"}})
	seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "roads", "value": map[string]any{"detectDuplicatedSubscription": false}})
	seed(t, e, "/api/administrators", map[string]any{"email": "console@invalid.local", "password": validPassword})
	seed(t, e, "/api/bounces", map[string]any{"channel": "email", "userChannelId": "b@invalid.local", "hardBounceCount": 1, "state": "active"})

	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return url.QueryEscape(string(b))
	}
	// get replays one GET and checks it is 2xx with the shape the console
	// reads: a list of records with ids, or {count}.
	get := func(t *testing.T, path string, headers ...string) []byte {
		t.Helper()
		r := e.Do(t, "GET", path, nil, headers...)
		if r.Status/100 != 2 {
			t.Fatalf("GET %s: %d %s (the console shows \"Error getting data\")", path, r.Status, r.Body)
		}
		return r.Body
	}
	listOf := func(t *testing.T, path string, headers ...string) []map[string]any {
		t.Helper()
		var items []map[string]any
		if err := json.Unmarshal(get(t, path, headers...), &items); err != nil {
			t.Fatalf("GET %s is not a list: %v", path, err)
		}
		for _, it := range items {
			if id, _ := it["id"].(string); id == "" {
				t.Fatalf("GET %s: an item without id: %v", path, it)
			}
		}
		return items
	}
	countOf := func(t *testing.T, path string, headers ...string) int {
		t.Helper()
		var c map[string]any
		if err := json.Unmarshal(get(t, path, headers...), &c); err != nil {
			t.Fatalf("GET %s is not {count}: %v", path, err)
		}
		n, ok := c["count"].(float64)
		if !ok || len(c) != 1 {
			t.Fatalf("GET %s: %v, want {count}", path, c)
		}
		return int(n)
	}

	pages := []struct {
		model string
		sorts []string // the table's sortable columns
		// search is a word the page's records hold, found by $text.
		search string
		// jsonSearch is a where typed in the search box.
		jsonSearch map[string]any
		newItem    map[string]any
		edit       func(map[string]any) // what the editor changes
	}{
		{"subscriptions", []string{"serviceName", "channel", "state", "updated"}, "roads", map[string]any{"serviceName": "roads"},
			map[string]any{"serviceName": "parks", "channel": "sms", "userChannelId": "250-555-0100", "state": "unconfirmed"},
			func(m map[string]any) { m["state"] = "confirmed" }},
		{"notifications", []string{"serviceName", "channel", "state", "isBroadcast", "updated"}, "roads", map[string]any{"channel": "inApp"},
			map[string]any{"serviceName": "parks", "channel": "in-app", "isBroadcast": true, "state": "new", "message": map[string]any{"title": "Park open"}},
			func(m map[string]any) { m["message"] = map[string]any{"title": "Park open again"} }},
		{"configurations", []string{"name", "serviceName", "updated"}, "roads", map[string]any{"name": "subscription"},
			map[string]any{"name": "notification", "serviceName": "parks", "value": map[string]any{"rss": map[string]any{"url": "https://invalid.local/rss"}}},
			func(m map[string]any) {
				m["value"] = map[string]any{"rss": map[string]any{"url": "https://invalid.local/feed"}}
			}},
		{"administrators", []string{"email", "updated"}, "console", map[string]any{"email": "console@invalid.local"},
			map[string]any{"email": "second@invalid.local", "password": validPassword, "username": "second"},
			func(m map[string]any) { m["username"] = "renamed" }},
		{"bounces", []string{"userChannelId", "hardBounceCount", "state", "updated"}, "b@invalid.local", map[string]any{"state": "active"},
			map[string]any{"channel": "email", "userChannelId": "c@invalid.local", "hardBounceCount": 0, "state": "active"},
			func(m map[string]any) { m["hardBounceCount"] = float64(2) }},
	}
	for _, p := range pages {
		t.Run(p.model, func(t *testing.T) {
			base := "/api/" + p.model
			first := map[string]any{"limit": 10, "skip": 0}
			items := listOf(t, base+"?filter="+enc(first))
			if n := countOf(t, base+"/count"); n != len(items) || n == 0 {
				t.Fatalf("count %d, list %d", n, len(items))
			}
			listOf(t, base+"?filter="+enc(map[string]any{"limit": 10, "skip": 10}))
			listOf(t, base+"?filter="+enc(map[string]any{"skip": 0})) // "All" per page
			for _, key := range p.sorts {
				for _, dir := range []string{"asc", "desc"} {
					listOf(t, base+"?filter="+enc(map[string]any{"limit": 10, "skip": 0, "order": [][]string{{key, dir}}}))
				}
			}
			// The search box: text, then JSON, then cleared.
			text := map[string]any{"$text": map[string]any{"$search": p.search}}
			found := listOf(t, base+"?filter="+enc(map[string]any{"limit": 10, "skip": 0, "where": text}))
			if n := countOf(t, base+"/count?where="+enc(text)); n != len(found) || n == 0 {
				t.Errorf("text search: count %d, list %d", n, len(found))
			}
			found = listOf(t, base+"?filter="+enc(map[string]any{"limit": 10, "skip": 0, "where": p.jsonSearch}))
			if n := countOf(t, base+"/count?where="+enc(p.jsonSearch)); n != len(found) || n == 0 {
				t.Errorf("JSON search %v: count %d, list %d", p.jsonSearch, n, len(found))
			}
			listOf(t, base+"?filter="+enc(first))

			// New, then the list again with filter {} merged into the last.
			if r := e.Do(t, "POST", base, p.newItem); r.Status/100 != 2 {
				t.Fatalf("POST %s: %d %s", base, r.Status, r.Body)
			}
			after := listOf(t, base+"?filter="+enc(first))
			if len(after) != len(items)+1 {
				t.Fatalf("after POST the list has %d, want %d", len(after), len(items)+1)
			}
			countOf(t, base+"/count")

			// Edit the item as listed: the editor sends it back without
			// id, created and updated (and, for an administrator,
			// without the blank password), with its change.
			before := map[any]bool{}
			for _, it := range items {
				before[it["id"]] = true
			}
			var item map[string]any
			for _, it := range after {
				if !before[it["id"]] {
					item = it
				}
			}
			id := item["id"].(string)
			edited := map[string]any{}
			for k, v := range item {
				switch k {
				case "id", "created", "updated":
				default:
					edited[k] = v
				}
			}
			p.edit(edited)
			if r := e.Do(t, "PUT", base+"/"+id, edited); r.Status/100 != 2 {
				t.Fatalf("PUT %s/%s: %d %s", base, id, r.Status, r.Body)
			}
			listOf(t, base+"?filter="+enc(first))

			if r := e.Do(t, "DELETE", base+"/"+id, nil); r.Status/100 != 2 {
				t.Fatalf("DELETE %s/%s: %d %s", base, id, r.Status, r.Body)
			}
			listOf(t, base+"?filter="+enc(first))
			countOf(t, base+"/count")
		})
	}

	t.Run("the original's protected configurations are listed", func(t *testing.T) {
		names := map[string]bool{}
		for _, c := range listOf(t, "/api/configurations?filter="+enc(map[string]any{"skip": 0})) {
			names[c["name"].(string)] = true
		}
		if !names["rsa"] || !names["dbSchemaVersion"] {
			t.Errorf("configurations %v lack rsa or dbSchemaVersion, which the original lists (without edit and delete)", names)
		}
	})

	t.Run("top bar, sign-in with a token, and the pages as that administrator", func(t *testing.T) {
		var who map[string]any
		json.Unmarshal(get(t, "/api/administrators/whoami", apitest.Anonymous...), &who)
		if who["role"] != "Anonymous" {
			t.Fatalf("whoami before sign-in: %v", who)
		}
		r := e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "console@invalid.local", "password": validPassword, "tokenName": "webConsole", "ttl": 43200}, apitest.Anonymous...)
		if r.Status != http.StatusOK {
			t.Fatalf("login: %d %s", r.Status, r.Body)
		}
		tok, _ := r.Map(t)["token"].(string)
		if tok == "" {
			t.Fatalf("login answered %s, want {token}", r.Body)
		}
		json.Unmarshal(get(t, "/api/administrators/whoami", apitest.Token(tok)...), &who)
		if who["role"] != "Admin" || who["authnStrategy"] != "accessToken" || who["securityId"] == "" {
			t.Fatalf("whoami with the token: %v", who)
		}
		// Configurations and bounces are for super admins, in the original too.
		for _, model := range []string{"subscriptions", "notifications", "administrators"} {
			listOf(t, "/api/"+model+"?filter="+enc(map[string]any{"limit": 10, "skip": 0}), apitest.Token(tok)...)
			countOf(t, "/api/"+model+"/count", apitest.Token(tok)...)
		}
		var services []string
		if err := json.Unmarshal(get(t, "/api/subscriptions/services", apitest.Token(tok)...), &services); err != nil || len(services) == 0 {
			t.Errorf("subscriptions/services: %v %v, want the service names", services, err)
		}
	})

	t.Run("the API Explorer page frames the explorer from the same origin", func(t *testing.T) {
		r := e.Do(t, "GET", "/api/explorer", nil, "Sec-Fetch-Dest", "iframe")
		if r.Status != http.StatusOK || !strings.Contains(r.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("explorer: %d %s", r.Status, r.Header.Get("Content-Type"))
		}
		csp := r.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'self'") || r.Header.Get("X-Frame-Options") == "DENY" {
			t.Errorf("the explorer cannot be framed by the console: CSP %q, X-Frame-Options %q", csp, r.Header.Get("X-Frame-Options"))
		}
	})
}
