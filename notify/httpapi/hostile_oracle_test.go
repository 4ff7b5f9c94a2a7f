package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// Findings 3 and 6: callers who are not administrators cannot filter,
// sort or project on fields the API hides from them.
func TestHiddenFieldOracle(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	mine := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "svc", "channel": "email", "userChannelId": "victim@invalid.local"}, apitest.SMUser("mallory")...).Expect(t, http.StatusOK).Map(t)["id"].(string)
	addNotification(t, e, notify.Notification{Channel: "inApp", IsBroadcast: true, ServiceName: "svc", State: "new", ReadBy: []string{"alice"}, DeletedBy: []string{"bob"}, Message: notifDoc("title", "t")})

	subscriptionCases := []struct{ where, field string }{
		{`{"id":"` + mine + `","confirmationRequest.confirmationCode":{"$regex":"^0"}}`, "confirmationRequest"},
		{`{"confirmationRequest":{"$exists":true}}`, "confirmationRequest"},
		{`{"confirmationRequest.confirmationCode.x":"1"}`, "confirmationRequest"},
		{`{"unsubscriptionCode":"12345"}`, "unsubscriptionCode"},
		{`{"unsubscriptionCode.0":"1"}`, "unsubscriptionCode"},
		{`{"$or":[{"state":"x"},{"unsubscriptionCode":{"$regex":"^1"}}]}`, "unsubscriptionCode"},
		{`{"$and":[{"$nor":[{"createdBy.securityId":"x"}]}]}`, "createdBy"},
		{`{"updatedBy":{"$elemMatch":{"role":"x"}}}`, "updatedBy"},
		{`{"state":{"$not":{"$eq":"x"}},"$or":[{"$and":[{"confirmationRequest.sendRequest":true}]}]}`, "confirmationRequest"},
		{`{"confirmationRequest..confirmationCode":"1"}`, "confirmationRequest"},
		{`{"$text":{"$search":"12345"}}`, "$text"},
	}
	for _, tc := range subscriptionCases {
		t.Run("subscriptions where "+tc.where, func(t *testing.T) {
			r := e.Do(t, "GET", "/api/subscriptions/count?where="+q(tc.where), nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
			if m := r.Map(t)["message"].(string); !strings.Contains(m, tc.field) {
				t.Errorf("message %q does not name %s", m, tc.field)
			}
			e.Do(t, "GET", "/api/subscriptions?filter="+q(`{"where":`+tc.where+`}`), nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
		})
	}
	for _, f := range []string{
		`{"order":[["unsubscriptionCode","asc"]]}`,
		`{"order":"confirmationRequest.confirmationCode"}`,
		`{"order":{"createdBy.securityId":"desc"}}`,
		`{"fields":{"unsubscriptionCode":true}}`,
		`{"fields":["confirmationRequest"]}`,
	} {
		t.Run("subscriptions filter "+f, func(t *testing.T) {
			e.Do(t, "GET", "/api/subscriptions?filter="+q(f), nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
		})
	}
	t.Run("the bracket form is checked the same way", func(t *testing.T) {
		e.Do(t, "GET", "/api/subscriptions/count?where[unsubscriptionCode][$regex]=^1", nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
		e.Do(t, "GET", "/api/subscriptions?filter[where][confirmationRequest.confirmationCode]=1", nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
	})
	t.Run("visible fields still filter, and admins filter on anything", func(t *testing.T) {
		e.Do(t, "GET", "/api/subscriptions/count?where="+q(`{"serviceName":"svc","data.x":1}`), nil, apitest.SMUser("mallory")...).Expect(t, http.StatusOK)
		e.Do(t, "GET", "/api/subscriptions/count?where="+q(subscriptionCases[0].where), nil).Expect(t, http.StatusOK)
	})

	for _, where := range []string{
		`{"readBy":"alice"}`,
		`{"deletedBy":{"$in":["bob"]}}`,
		`{"readBy.0":"alice"}`,
		`{"$or":[{"isBroadcast":false},{"readBy":{"$elemMatch":{"$eq":"alice"}}}]}`,
		`{"createdBy.role":"SuperAdmin"}`,
		`{"dispatch.successful":"x"}`,
	} {
		t.Run("notifications where "+where, func(t *testing.T) {
			e.Do(t, "GET", "/api/notifications/count?where="+q(where), nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
			e.Do(t, "GET", "/api/notifications?filter="+q(`{"where":`+where+`}`), nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
		})
	}
	t.Run("notifications order and fields", func(t *testing.T) {
		e.Do(t, "GET", "/api/notifications?filter="+q(`{"order":"readBy"}`), nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
		e.Do(t, "GET", "/api/notifications?filter="+q(`{"fields":["deletedBy"]}`), nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
		id := list(t, e, "/api/notifications", apitest.SMUser("mallory")...)[0]["id"].(string)
		e.Do(t, "GET", "/api/notifications/"+id+"?filter="+q(`{"fields":["readBy"]}`), nil, apitest.SMUser("mallory")...).Expect(t, http.StatusBadRequest)
		var c map[string]float64
		e.Do(t, "GET", "/api/notifications/count?where="+q(`{"readBy":"alice"}`), nil).Expect(t, http.StatusOK).JSON(t, &c)
		if c["count"] != 1 {
			t.Errorf("admin count %v", c)
		}
	})
}
