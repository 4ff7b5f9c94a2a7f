package query_test

import (
	"net/url"
	"strconv"
	"strings"
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

func TestSortKeysAreBounded(t *testing.T) {
	order := `[`
	for i := 0; i < 33; i++ {
		if i > 0 {
			order += ","
		}
		order += `["f` + strconv.Itoa(i) + `","asc"]`
	}
	_, err := query.ParseFilter(jsonFilter(`{"order":`+order+`]}`), query.Subscriptions)
	wantBadRequest(t, err, "filter.order", "at most 32")
}

func TestRegexesAreBounded(t *testing.T) {
	for _, re := range []string{strings.Repeat("a", 1025), strings.Repeat("[a-z]{1,100}", 100), strings.Repeat("[a-z]{1,1000}", 6)} {
		_, err := query.ParseWhere(url.Values{"where": {`{"a":{"$regex":` + strconv.Quote(re) + `}}`}}, query.Subscriptions)
		wantBadRequest(t, err, "where.a.$regex")
	}
	for _, re := range []string{`^[a-z0-9._%+-]+@example\.com$`, `\d{5}`, `(?<=x)y`} {
		if _, err := query.ParseWhere(url.Values{"where": {`{"a":{"$regex":` + strconv.Quote(re) + `}}`}}, query.Subscriptions); err != nil {
			t.Errorf("%s: %v", re, err)
		}
	}
}
