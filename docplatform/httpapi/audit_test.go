package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform"
)

func TestAuditLogRecordsTheAuthLayersActions(t *testing.T) {
	w := newWorld(t)
	// A failed login, a denial, a CSRF refusal, a bad key, a regenerate, a logout.
	w.do(nil, request{method: "GET", path: "/api/auth/callback?error=access_denied"})
	w.do(w.member, request{method: "GET", path: "/test/groups/" + w.beta})
	w.do(w.member, request{method: "POST", path: "/test/any"})
	w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": "gk_bad"}})
	w.do(w.admin, request{method: "POST", path: "/api/api-key/regenerate", body: `{"groupId":"` + w.alpha + `"}`, header: map[string]string{"X-CSRF-Token": w.csrf(w.admin)}})
	w.do(noRedirect(w.outsider.Jar), request{method: "GET", path: "/api/auth/logout"})

	entries, err := w.store.ListAudit(context.Background(), docplatform.AuditFilter{AllGroups: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		action  docplatform.AuditAction
		outcome docplatform.AuditOutcome
		actor   string
		group   string
	}
	got := map[key]docplatform.AuditEntry{}
	for _, e := range entries {
		got[key{e.Action, e.Outcome, e.Actor, e.GroupID}] = e
		if _, ok := e.When.Start().Time(); !ok {
			t.Errorf("entry %v has no datetime", e.Action)
		}
		if e.IP != "127.0.0.1" {
			t.Errorf("entry %v has IP %q", e.Action, e.IP)
		}
	}
	for _, want := range []key{
		{docplatform.AuditLogin, docplatform.OutcomeSuccess, ada.Subject, ""},
		{docplatform.AuditAPIKeyCreated, docplatform.OutcomeSuccess, ada.Subject, w.alpha},
		{docplatform.AuditLoginFailed, docplatform.OutcomeFailure, "", ""},
		{docplatform.AuditAccessDenied, docplatform.OutcomeDenied, bob.Subject, w.beta},
		{docplatform.AuditAccessDenied, docplatform.OutcomeDenied, bob.Subject, ""},
		{docplatform.AuditAPIKeyFailed, docplatform.OutcomeFailure, "", ""},
		{docplatform.AuditAPIKeyRegenerated, docplatform.OutcomeSuccess, ada.Subject, w.alpha},
		{docplatform.AuditLogout, docplatform.OutcomeSuccess, carol.Subject, ""},
	} {
		if _, ok := got[want]; !ok {
			t.Errorf("no audit entry %+v", want)
		}
	}
	for _, e := range entries {
		for _, secret := range []string{w.key, w.adminToken, w.csrf(w.admin)} {
			if strings.Contains(e.Detail, secret) {
				t.Errorf("secret in audit detail of %s", e.Action)
			}
		}
	}
}
