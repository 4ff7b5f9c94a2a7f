package query_test

import (
	"net/url"
	"testing"

	"github.com/govkit/govkit/notify/query"
)

func TestHiddenPathsCannotBeQueried(t *testing.T) {
	s := query.Subscriptions.Hiding("secret", "meta.inner")
	refused := []string{
		`{"where":{"secret":1}}`,
		`{"where":{"secret.x":1}}`,
		`{"where":{"secret.0":1}}`,
		`{"where":{"meta":{"inner":1}}}`,
		`{"where":{"meta.inner.deep":{"$exists":true}}}`,
		`{"where":{"$or":[{"a":1},{"$and":[{"$nor":[{"secret":1}]}]}]}}`,
		`{"where":{"list":{"$elemMatch":{"x":1}},"secret":{"$elemMatch":{"y":1}}}}`,
		`{"where":{"$text":{"$search":"x"}}}`,
		`{"order":"secret"}`,
		`{"order":[["meta","asc"]]}`,
		`{"order":{"score":{"$meta":"textScore"}}}`,
		`{"fields":["secret"]}`,
		`{"fields":{"meta.inner":false}}`,
	}
	for _, f := range refused {
		if _, err := query.ParseFilter(jsonFilter(f), s); err == nil {
			t.Errorf("%s: accepted", f)
		}
	}
	for _, w := range []string{`{"secret":1}`, `{"$or":[{"meta.inner":1}]}`} {
		if _, err := query.ParseWhere(url.Values{"where": {w}}, s); err == nil {
			t.Errorf("where %s: accepted", w)
		}
	}
	if _, err := query.ParseWhere(mustQuery(t, "where[secret][$regex]=^1"), s); err == nil {
		t.Error("bracket form accepted")
	}
	allowed := []string{
		`{"where":{"secretary":1,"meta.other":1,"list":{"$elemMatch":{"secret":1}}},"order":"meta.other","fields":["secretary"]}`,
	}
	for _, f := range allowed {
		if _, err := query.ParseFilter(jsonFilter(f), s); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		// The unrestricted schema is not changed by Hiding.
		if _, err := query.ParseFilter(jsonFilter(`{"where":{"secret":1}}`), query.Subscriptions); err != nil {
			t.Errorf("the schema Hiding copied now refuses: %v", err)
		}
	}
	err := func() error { _, err := query.ParseFilter(jsonFilter(`{"where":{"secret.x":1}}`), s); return err }()
	wantBadRequest(t, err, "filter.where.secret.x", `"secret.x"`, "hidden")
}

func TestEmptyFieldPathPartsAreRefused(t *testing.T) {
	for _, f := range []string{`{"where":{"a..b":1}}`, `{"where":{".a":1}}`, `{"where":{"a.":1}}`, `{"order":"a..b"}`, `{"fields":["a."]}`} {
		_, err := query.ParseFilter(jsonFilter(f), query.Subscriptions)
		wantBadRequest(t, err, "empty part")
	}
}
