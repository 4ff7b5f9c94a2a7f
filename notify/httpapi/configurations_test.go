package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

func TestConfigurations(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	c := seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "b", "value": map[string]any{"detectDuplicatedSubscription": true}, "extra": 1})
	id := c["id"].(string)
	seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "a", "value": map[string]any{}})

	t.Run("a started primary keeps the original's dbSchemaVersion record, which health counts", func(t *testing.T) {
		cs := list(t, e, "/api/configurations?filter="+q(`{"where":{"name":"dbSchemaVersion"}}`))
		if len(cs) != 1 || cs[0]["value"] != "0.9.0" || cs[0]["serviceName"] != nil {
			t.Fatalf("dbSchemaVersion records %v, want one with value 0.9.0 and no service", cs)
		}
		var n struct{ Count int }
		e.Do(t, "GET", "/api/configurations/count", nil).Expect(t, 200).JSON(t, &n)
		var h struct {
			Details map[string]struct {
				Status string
				Count  int
			}
		}
		e.Do(t, "GET", "/api/health", nil).Expect(t, 200).JSON(t, &h)
		if c := h.Details["config"]; c.Status != "up" || c.Count != n.Count || c.Count < 4 {
			t.Errorf("health's config %+v, want up counting all %d records (rsa, dbSchemaVersion and the two seeded)", c, n.Count)
		}
	})
	t.Run("anonymous callers are forbidden on every operation", func(t *testing.T) {
		for _, op := range [][2]string{{"GET", ""}, {"GET", "/count"}, {"POST", ""}, {"PATCH", ""}, {"GET", "/" + id}, {"PATCH", "/" + id}, {"PUT", "/" + id}, {"DELETE", "/" + id}} {
			e.Do(t, op[0], "/api/configurations"+op[1], map[string]any{}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		}
	})
	t.Run("admins by token are forbidden: configurations are for super admins", func(t *testing.T) {
		aid := seed(t, e, "/api/administrators", map[string]any{"email": "c@invalid.local", "password": validPassword})["id"].(string)
		tok := e.Do(t, "POST", "/api/administrators/"+aid+"/access-tokens", map[string]any{}).Map(t)["id"].(string)
		e.Do(t, "GET", "/api/configurations", nil, apitest.Token(tok)...).Expect(t, http.StatusForbidden)
	})
	t.Run("POST answers 200 with the record, unknown fields kept", func(t *testing.T) {
		if c["extra"] != float64(1) || c["created"] == nil || c["createdBy"] == nil {
			t.Fatalf("got %v", c)
		}
		if !strings.HasSuffix(c["created"].(string), "Z") || len(c["created"].(string)) != len("2026-01-02T03:04:05.000Z") {
			t.Fatalf("created %v", c["created"])
		}
	})
	t.Run("name and value are required", func(t *testing.T) {
		e.Do(t, "POST", "/api/configurations", map[string]any{"value": 1}).Expect(t, http.StatusBadRequest)
		e.Do(t, "POST", "/api/configurations", map[string]any{"name": "x"}).Expect(t, http.StatusBadRequest)
	})
	t.Run("the same name and serviceName twice is 400", func(t *testing.T) {
		e.Do(t, "POST", "/api/configurations", map[string]any{"name": "subscription", "serviceName": "b", "value": 1}).Expect(t, http.StatusBadRequest)
	})
	t.Run("order by serviceName in both forms", func(t *testing.T) {
		a := list(t, e, "/api/configurations?filter="+q(`{"where":{"name":"subscription"},"order":[["serviceName","asc"]]}`))
		b := list(t, e, "/api/configurations?filter="+q(`{"where":{"name":"subscription"},"order":"serviceName"}`))
		if a[0]["serviceName"] != "a" || b[0]["serviceName"] != "a" {
			t.Fatalf("order %v %v", a[0]["serviceName"], b[0]["serviceName"])
		}
	})
	t.Run("GET by id", func(t *testing.T) {
		if m := e.Do(t, "GET", "/api/configurations/"+id, nil).Expect(t, 200).Map(t); m["serviceName"] != "b" {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("count with where", func(t *testing.T) {
		var n map[string]float64
		e.Do(t, "GET", "/api/configurations/count?where="+q(`{"name":"subscription"}`), nil).Expect(t, 200).JSON(t, &n)
		if n["count"] != 2 {
			t.Fatalf("count %v", n)
		}
	})
	t.Run("PATCH by id is 204 and merges", func(t *testing.T) {
		e.Do(t, "PATCH", "/api/configurations/"+id, map[string]any{"value": map[string]any{"x": 1}}).Expect(t, http.StatusNoContent)
		m := e.Do(t, "GET", "/api/configurations/"+id, nil).Map(t)
		if m["name"] != "subscription" || m["value"].(map[string]any)["x"] != float64(1) || m["extra"] != float64(1) {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("PUT by id is 204 and replaces", func(t *testing.T) {
		e.Do(t, "PUT", "/api/configurations/"+id, map[string]any{"name": "subscription", "serviceName": "b", "value": 2}).Expect(t, http.StatusNoContent)
		m := e.Do(t, "GET", "/api/configurations/"+id, nil).Map(t)
		if m["value"] != float64(2) || m["extra"] != nil || m["created"] != c["created"] {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("bulk PATCH with where answers the count", func(t *testing.T) {
		var n map[string]float64
		e.Do(t, "PATCH", "/api/configurations?where="+q(`{"name":"subscription"}`), map[string]any{"value": 3}).Expect(t, 200).JSON(t, &n)
		if n["count"] != 2 {
			t.Fatalf("count %v", n)
		}
	})
	t.Run("unknown ids are 404 everywhere (the original answers 500)", func(t *testing.T) {
		for _, m := range []string{"GET", "PATCH", "PUT", "DELETE"} {
			for _, bad := range []string{"000000000000000000000000", "not-an-id"} {
				e.Do(t, m, "/api/configurations/"+bad, map[string]any{"name": "x", "value": 1}).Expect(t, http.StatusNotFound)
			}
		}
	})
	t.Run("DELETE by id is 204", func(t *testing.T) {
		e.Do(t, "DELETE", "/api/configurations/"+id, nil).Expect(t, http.StatusNoContent)
		e.Do(t, "GET", "/api/configurations/"+id, nil).Expect(t, http.StatusNotFound)
	})
	t.Run("a notification configuration with an RSS feed keeps the request host", func(t *testing.T) {
		m := seed(t, e, "/api/configurations", map[string]any{"name": "notification", "serviceName": "rss", "value": map[string]any{"rss": map[string]any{"url": "http://x/feed"}}})
		if m["value"].(map[string]any)["httpHost"] != e.URL {
			t.Fatalf("got %v", m["value"])
		}
	})
}

func TestBounces(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	b := seed(t, e, "/api/bounces", map[string]any{"channel": "email", "userChannelId": "a@b.c", "bounceMessages": []any{map[string]any{"date": "2026-01-02T03:04:05Z", "message": "m"}}})
	id := b["id"].(string)
	t.Run("POST applies the defaults and writes dates with milliseconds", func(t *testing.T) {
		if b["state"] != "active" || b["hardBounceCount"] != float64(0) || b["latestNotificationStarted"] != nil {
			t.Fatalf("got %v", b)
		}
		if d := b["bounceMessages"].([]any)[0].(map[string]any)["date"]; d != "2026-01-02T03:04:05.000Z" {
			t.Fatalf("date %v", d)
		}
	})
	t.Run("channel and userChannelId are required, state is active or deleted", func(t *testing.T) {
		e.Do(t, "POST", "/api/bounces", map[string]any{"userChannelId": "x"}).Expect(t, http.StatusBadRequest)
		e.Do(t, "POST", "/api/bounces", map[string]any{"channel": "email"}).Expect(t, http.StatusBadRequest)
		e.Do(t, "POST", "/api/bounces", map[string]any{"channel": "email", "userChannelId": "x", "state": "gone"}).Expect(t, http.StatusBadRequest)
	})
	t.Run("anonymous callers are forbidden", func(t *testing.T) {
		e.Do(t, "GET", "/api/bounces", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "POST", "/api/bounces", map[string]any{"channel": "email", "userChannelId": "x"}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("a date-only date-time is 400 naming the field", func(t *testing.T) {
		r := e.Do(t, "PATCH", "/api/bounces/"+id, map[string]any{"latestNotificationStarted": "2026-01-02"}).Expect(t, http.StatusBadRequest)
		if !strings.Contains(r.Map(t)["message"].(string), "latestNotificationStarted") {
			t.Fatalf("body %s", r.Body)
		}
	})
	t.Run("a date-time with an offset is 400", func(t *testing.T) {
		e.Do(t, "PATCH", "/api/bounces/"+id, map[string]any{"latestNotificationStarted": "2026-01-02T03:04:05+01:00"}).Expect(t, http.StatusBadRequest)
	})
	t.Run("a full date-time is accepted: PATCH 204", func(t *testing.T) {
		e.Do(t, "PATCH", "/api/bounces/"+id, map[string]any{"latestNotificationStarted": "2026-01-02T03:04:05.123456Z", "hardBounceCount": 3}).Expect(t, http.StatusNoContent)
		m := e.Do(t, "GET", "/api/bounces/"+id, nil).Expect(t, 200).Map(t)
		if m["latestNotificationStarted"] != "2026-01-02T03:04:05.123Z" || m["hardBounceCount"] != float64(3) {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("where on a date field compares as dates", func(t *testing.T) {
		var n map[string]float64
		e.Do(t, "GET", "/api/bounces/count?where="+q(`{"latestNotificationStarted":{"$gt":"2026-01-01T00:00:00Z"}}`), nil).Expect(t, 200).JSON(t, &n)
		if n["count"] != 1 {
			t.Fatalf("count %v", n)
		}
		e.Do(t, "GET", "/api/bounces/count?where="+q(`{"latestNotificationStarted":{"$gt":"2026-01-01"}}`), nil).Expect(t, http.StatusBadRequest)
	})
	t.Run("bulk PATCH with where answers the count and checks types", func(t *testing.T) {
		var n map[string]float64
		e.Do(t, "PATCH", "/api/bounces?where="+q(`{"userChannelId":"a@b.c"}`), map[string]any{"state": "deleted"}).Expect(t, 200).JSON(t, &n)
		if n["count"] != 1 {
			t.Fatalf("count %v", n)
		}
		e.Do(t, "PATCH", "/api/bounces?where="+q(`{}`), map[string]any{"hardBounceCount": "many"}).Expect(t, http.StatusBadRequest)
	})
	t.Run("PUT and DELETE by id are 204", func(t *testing.T) {
		e.Do(t, "PUT", "/api/bounces/"+id, map[string]any{"channel": "email", "userChannelId": "a@b.c"}).Expect(t, http.StatusNoContent)
		e.Do(t, "DELETE", "/api/bounces/"+id, nil).Expect(t, http.StatusNoContent)
		e.Do(t, "DELETE", "/api/bounces/"+id, nil).Expect(t, http.StatusNotFound)
	})
}

// TestQueryRules checks the seed's query-string rules through the API.
func TestQueryRules(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	seed(t, e, "/api/configurations", map[string]any{"name": "n", "serviceName": "s", "value": 1})
	cases := []struct {
		name, query string
		status      int
		mention     string
	}{
		{"$ operators are accepted", `filter={"where":{"serviceName":{"$in":["s"]}}}`, 200, ""},
		{"the legacy inq operator is 400 naming $in", `filter={"where":{"serviceName":{"inq":["s"]}}}`, 400, "$in"},
		{"the legacy neq operator is 400 naming $ne", `filter={"where":{"serviceName":{"neq":"s"}}}`, 400, "$ne"},
		{"the legacy like operator is 400 naming $regex", `filter={"where":{"serviceName":{"like":"s"}}}`, 400, "$regex"},
		{"legacy and with an array is 400 naming $and", `filter={"where":{"and":[{"name":"n"}]}}`, 400, "$and"},
		{"a field called and is still a field", `filter={"where":{"and":"x"}}`, 200, ""},
		{"the legacy order form is 400", `filter={"order":["serviceName ASC"]}`, 400, "serviceName"},
		{"$where runs code: 400", `filter={"where":{"$where":"sleep(100)"}}`, 400, "$where"},
		{"$expr is refused", `filter={"where":{"$expr":{"$eq":["$name","n"]}}}`, 400, "$expr"},
		{"malformed filter JSON is 400 (the original answers 500)", `filter={"where":`, 400, "filter"},
		{"malformed where JSON on count is 400", `where={`, 400, "where"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "/api/configurations"
			if strings.HasPrefix(c.query, "where=") {
				path += "/count"
			}
			k, v, _ := strings.Cut(c.query, "=")
			r := e.Do(t, "GET", path+"?"+k+"="+q(v), nil).Expect(t, c.status)
			if c.mention != "" && !strings.Contains(r.Map(t)["message"].(string), c.mention) {
				t.Fatalf("message does not name %q: %s", c.mention, r.Body)
			}
		})
	}
}

// TestStatusCodes is the seed's 204-versus-200 table: by-id PATCH, PUT and
// DELETE answer 204 except subscription update, replace and delete, which
// keep 200; creates answer 200.
func TestStatusCodes(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	conf := seed(t, e, "/api/configurations", map[string]any{"name": "n", "value": 1})["id"].(string)
	bounce := seed(t, e, "/api/bounces", map[string]any{"channel": "email", "userChannelId": "x@y.z"})["id"].(string)
	admin := seed(t, e, "/api/administrators", map[string]any{"email": "s@invalid.local", "password": validPassword})["id"].(string)
	s1 := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "email", "userChannelId": "a@b.c", "state": "confirmed"})["id"].(string)
	s2 := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "email", "userChannelId": "b@b.c", "state": "confirmed"})["id"].(string)
	cases := []struct {
		method, path string
		body         any
		status       int
	}{
		{"PATCH", "/api/configurations/" + conf, map[string]any{"value": 2}, 204},
		{"PUT", "/api/configurations/" + conf, map[string]any{"name": "n", "value": 3}, 204},
		{"PATCH", "/api/bounces/" + bounce, map[string]any{"hardBounceCount": 1}, 204},
		{"PUT", "/api/bounces/" + bounce, map[string]any{"channel": "email", "userChannelId": "x@y.z"}, 204},
		{"PATCH", "/api/administrators/" + admin, map[string]any{"username": "s"}, 204},
		{"PUT", "/api/administrators/" + admin, map[string]any{"email": "s@invalid.local"}, 204},
		{"PATCH", "/api/subscriptions/" + s1, map[string]any{"data": map[string]any{"a": 1}}, 200},
		{"PUT", "/api/subscriptions/" + s1, map[string]any{"serviceName": "s", "channel": "email", "userChannelId": "a@b.c", "state": "confirmed"}, 200},
		{"DELETE", "/api/subscriptions/" + s2, nil, 200},
		{"DELETE", "/api/configurations/" + conf, nil, 204},
		{"DELETE", "/api/bounces/" + bounce, nil, 204},
		{"DELETE", "/api/administrators/" + admin, nil, 204},
		{"POST", "/api/configurations", map[string]any{"name": "m", "value": 1}, 200},
	}
	for _, c := range cases {
		t.Run(c.method+" "+strings.SplitN(c.path, "/", 4)[2]+" answers "+http.StatusText(c.status), func(t *testing.T) {
			e.Do(t, c.method, c.path, c.body).Expect(t, c.status)
		})
	}
}

func TestRequestBodies(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	t.Run("a body over the limit is 413", func(t *testing.T) {
		big := `{"name":"n","value":"` + strings.Repeat("x", 2<<20) + `"}`
		e.Do(t, "POST", "/api/configurations", big).Expect(t, http.StatusRequestEntityTooLarge)
	})
	t.Run("invalid JSON is 400", func(t *testing.T) {
		e.Do(t, "POST", "/api/configurations", `{"name":`).Expect(t, http.StatusBadRequest)
	})
	t.Run("a known field of the wrong type is 400 naming it", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/bounces", map[string]any{"channel": 5, "userChannelId": "x"}).Expect(t, http.StatusBadRequest)
		if !strings.Contains(r.Map(t)["message"].(string), "channel") {
			t.Fatalf("body %s", r.Body)
		}
	})
}
