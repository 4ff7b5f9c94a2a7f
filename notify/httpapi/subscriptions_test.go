package httpapi_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

func TestSubscriptionList(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userId": "bar", "userChannelId": "bar@foo.com", "state": "confirmed", "confirmationRequest": map[string]any{"confirmationCode": "12345"}})
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userId": "bar", "userChannelId": "bar@foo.com", "state": "deleted"})
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userId": "baz", "userChannelId": "baz@foo.com", "state": "confirmed"})

	t.Run("anonymous callers are forbidden", func(t *testing.T) {
		r := e.Do(t, "GET", "/api/subscriptions", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		if m := r.Map(t); m["message"] != "Forbidden resource" || m["error"] != "Forbidden" {
			t.Fatalf("body %s", r.Body)
		}
	})
	t.Run("a SiteMinder user sees only its own subscriptions that are not deleted", func(t *testing.T) {
		subs := list(t, e, "/api/subscriptions", apitest.SMUser("bar")...)
		if len(subs) != 1 || subs[0]["userChannelId"] != "bar@foo.com" || subs[0]["state"] != "confirmed" {
			t.Fatalf("got %v", subs)
		}
	})
	t.Run("a SiteMinder user does not see confirmationRequest, unsubscriptionCode, createdBy or updatedBy", func(t *testing.T) {
		s := list(t, e, "/api/subscriptions", apitest.SMUser("bar")...)[0]
		for _, k := range []string{"confirmationRequest", "unsubscriptionCode", "createdBy", "updatedBy"} {
			if _, ok := s[k]; ok {
				t.Errorf("%s shown to a user", k)
			}
		}
	})
	t.Run("a user's where cannot widen what it sees", func(t *testing.T) {
		for _, w := range []string{`{"userId":"baz"}`, `{"$or":[{"userId":"baz"},{"state":"deleted"}]}`} {
			subs := list(t, e, "/api/subscriptions?filter="+q(`{"where":`+w+`}`), apitest.SMUser("bar")...)
			for _, s := range subs {
				if s["userId"] != "bar" || s["state"] == "deleted" {
					t.Fatalf("where %s showed %v", w, s)
				}
			}
			var c map[string]float64
			e.Do(t, "GET", "/api/subscriptions/count?where="+q(w), nil, apitest.SMUser("bar")...).Expect(t, 200).JSON(t, &c)
			if c["count"] != float64(len(subs)) {
				t.Fatalf("count %v for %d listed", c, len(subs))
			}
		}
	})
	t.Run("admins see every subscription with every field", func(t *testing.T) {
		subs := list(t, e, "/api/subscriptions")
		if len(subs) != 3 {
			t.Fatalf("got %d", len(subs))
		}
		if _, ok := subs[0]["confirmationRequest"]; !ok {
			t.Fatal("confirmationRequest hidden from admin")
		}
		if subs[0]["_id"] != nil || subs[0]["__v"] != nil || subs[0]["id"] == nil {
			t.Fatalf("id fields: %v", subs[0])
		}
	})
	t.Run("count applies the same restriction as the list", func(t *testing.T) {
		var c map[string]float64
		e.Do(t, "GET", "/api/subscriptions/count", nil, apitest.SMUser("bar")...).Expect(t, 200).JSON(t, &c)
		if c["count"] != 1 {
			t.Fatalf("user count %v", c)
		}
		e.Do(t, "GET", "/api/subscriptions/count?where="+q(`{"state":"confirmed"}`), nil).Expect(t, 200).JSON(t, &c)
		if c["count"] != 2 {
			t.Fatalf("admin count %v", c)
		}
		e.Do(t, "GET", "/api/subscriptions/count", nil, apitest.Anonymous...).Expect(t, 403)
	})
	t.Run("filter with fields shows only the selected fields", func(t *testing.T) {
		subs := list(t, e, "/api/subscriptions?filter="+q(`{"fields":{"serviceName":true},"limit":1}`))
		if len(subs) != 1 || len(subs[0]) != 2 || subs[0]["serviceName"] != "myService" || subs[0]["id"] == nil {
			t.Fatalf("got %v", subs)
		}
	})
	t.Run("filter in bracket form works like the JSON form", func(t *testing.T) {
		subs := list(t, e, "/api/subscriptions?filter[where][userChannelId]=baz@foo.com")
		if len(subs) != 1 {
			t.Fatalf("got %d", len(subs))
		}
	})
	t.Run("order as a list of pairs and as a field name", func(t *testing.T) {
		a := list(t, e, "/api/subscriptions?filter="+q(`{"order":[["userChannelId","desc"]]}`))
		b := list(t, e, "/api/subscriptions?filter="+q(`{"order":"userChannelId"}`))
		if a[0]["userChannelId"] != "baz@foo.com" || b[0]["userChannelId"] != "bar@foo.com" {
			t.Fatalf("order: %v / %v", a[0]["userChannelId"], b[0]["userChannelId"])
		}
	})
}

func TestSubscriptionCreate(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})

	t.Run("admins create subscriptions without sending a confirmation request when sendRequest is false", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/subscriptions", map[string]any{
			"serviceName": "myService", "channel": "email", "userChannelId": "bar@foo.com",
			"confirmationRequest": map[string]any{"sendRequest": false, "textBody": "x"},
		}).Expect(t, http.StatusOK)
		if m := r.Map(t); m["state"] != "unconfirmed" || m["id"] == nil {
			t.Fatalf("body %s", r.Body)
		}
		if n := len(e.Mail.Mails()); n != 0 {
			t.Fatalf("%d mails sent", n)
		}
	})

	t.Run("admin confirmation request is sent with every static token merged", func(t *testing.T) {
		before := len(e.Mail.Mails())
		r := e.Do(t, "POST", "/api/subscriptions", map[string]any{
			"serviceName": "myService", "channel": "email", "userChannelId": "foo@bar.com", "unsubscriptionCode": "54321",
			"confirmationRequest": map[string]any{
				"from": "a@b.com", "subject": "subject", "sendRequest": true, "confirmationCode": "12345",
				"textBody": "{subscription_confirmation_code} {service_name} {http_host} {rest_api_root} {subscription_id} {unsubscription_code} {unsubscription_url} {subscription_confirmation_url} {unsubscription_reversion_url}",
			},
		}).Expect(t, http.StatusOK)
		id := r.Map(t)["id"].(string)
		m := e.WaitMail(t, before+1)[before]
		if m.Envelope.To[0] != "foo@bar.com" || m.Subject != "subject" {
			t.Fatalf("mail to %v subject %q", m.Envelope.To, m.Subject)
		}
		host := e.URL // scheme://127.0.0.1:port — the port is kept (the original drops it)
		want := "12345 myService " + host + " /api " + id + " 54321 " +
			host + "/api/subscriptions/" + id + "/unsubscribe?unsubscriptionCode=54321 " +
			host + "/api/subscriptions/" + id + "/verify?confirmationCode=12345 " +
			host + "/api/subscriptions/" + id + "/unsubscribe/undo?unsubscriptionCode=54321"
		if strings.TrimSpace(m.Text) != want {
			t.Fatalf("text\n got %q\nwant %q", m.Text, want)
		}
	})

	t.Run("admins get an unsubscription code generated when they give none", func(t *testing.T) {
		m := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "email", "userChannelId": "a@b.c", "confirmationRequest": map[string]any{"sendRequest": false}})
		if ok, _ := regexp.MatchString(`^\d{5}$`, m["unsubscriptionCode"].(string)); !ok {
			t.Fatalf("code %v", m["unsubscriptionCode"])
		}
	})

	t.Run("a non-admin creates an SMS subscription and Swift is called with the config template", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "sms", "userChannelId": "12345"}, apitest.Anonymous...).Expect(t, http.StatusOK)
		m := r.Map(t)
		reqs := e.SMS.Requests()
		if len(reqs) != 1 || reqs[0].Path != "/123/12345" {
			t.Fatalf("swift requests %v", reqs)
		}
		if ok, _ := regexp.MatchString(`^Enter \d{5} on screen$`, reqs[0].Body["MessageBody"].(string)); !ok {
			t.Fatalf("body %v", reqs[0].Body)
		}
		if reqs[0].Body["Reference"] != m["id"] {
			t.Fatalf("Reference %v, want the subscription id", reqs[0].Body["Reference"])
		}
		for _, k := range []string{"confirmationRequest", "unsubscriptionCode", "createdBy", "updatedBy"} {
			if _, ok := m[k]; ok {
				t.Errorf("%s shown to anonymous caller", k)
			}
		}
	})

	t.Run("a non-admin cannot choose the confirmation message, code or state", func(t *testing.T) {
		before := len(e.Mail.Mails())
		r := e.Do(t, "POST", "/api/subscriptions", map[string]any{
			"serviceName": "myService", "channel": "email", "userChannelId": "victim@foo.com", "state": "confirmed",
			"confirmationRequest": map[string]any{"from": "evil@x.com", "subject": "spam", "textBody": "buy now", "confirmationCode": "1", "sendRequest": true},
		}, apitest.Anonymous...).Expect(t, http.StatusOK)
		id := r.Map(t)["id"].(string)
		m := e.WaitMail(t, before+1)[before]
		if m.Subject != "Subscription confirmation" || strings.Contains(m.Text, "buy now") {
			t.Fatalf("spoofed template used: %q %q", m.Subject, m.Text)
		}
		s := sub(t, e, id)
		if s["state"] != "unconfirmed" || s["confirmationRequest"].(map[string]any)["confirmationCode"] == "1" {
			t.Fatalf("stored %v", s)
		}
	})

	t.Run("anonymous creation keeps data", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "d", "channel": "sms", "userChannelId": "250", "data": map[string]any{"gender": "female"}}, apitest.Anonymous...).Expect(t, 200)
		id := r.Map(t)["id"].(string)
		if d, _ := sub(t, e, id)["data"].(map[string]any); d["gender"] != "female" {
			t.Fatalf("data %v", d)
		}
	})

	t.Run("subscription tokens stay untouched in the confirmation request", func(t *testing.T) {
		before := len(e.Mail.Mails())
		e.Do(t, "POST", "/api/subscriptions", map[string]any{
			"serviceName": "tok", "channel": "email", "userChannelId": "tok@foo.com", "data": map[string]any{"name": "Mallory"},
			"confirmationRequest": map[string]any{"from": "a@b.com", "subject": "s", "sendRequest": true, "textBody": "hi {subscription::name} {name} {confirmation_code}", "confirmationCode": "777"},
		}).Expect(t, 200)
		m := e.WaitMail(t, before+1)[before]
		if strings.TrimSpace(m.Text) != "hi {subscription::name} {name} 777" {
			t.Fatalf("text %q", m.Text)
		}
	})

	t.Run("an invalid broadcastPushNotificationFilter is 400", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "f", "channel": "email", "userChannelId": "f@b.c", "broadcastPushNotificationFilter": "a === 'b'"}, apitest.Anonymous...).Expect(t, http.StatusBadRequest)
		if !strings.Contains(r.Map(t)["message"].(string), "broadcastPushNotificationFilter") {
			t.Fatalf("message %s", r.Body)
		}
	})
	t.Run("a valid broadcastPushNotificationFilter is accepted", func(t *testing.T) {
		e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "f", "channel": "email", "userChannelId": "f@b.c", "broadcastPushNotificationFilter": "a == 'b'"}, apitest.Anonymous...).Expect(t, http.StatusOK)
	})
	t.Run("missing required fields and bad channels are 400 and store nothing", func(t *testing.T) {
		var c map[string]float64
		e.Do(t, "GET", "/api/subscriptions/count?where="+q(`{"serviceName":"bad"}`), nil).JSON(t, &c)
		for name, body := range map[string]map[string]any{
			"no userChannelId": {"serviceName": "bad", "channel": "email"},
			"no serviceName":   {"channel": "email", "userChannelId": "x@y.z"},
			"channel fax":      {"serviceName": "bad", "channel": "fax", "userChannelId": "x@y.z"},
			"not an object":    nil,
		} {
			var b any = body
			if body == nil {
				b = `["a"]`
			}
			e.Do(t, "POST", "/api/subscriptions", b, apitest.Anonymous...).Expect(t, http.StatusBadRequest)
			_ = name
		}
		var c2 map[string]float64
		e.Do(t, "GET", "/api/subscriptions/count?where="+q(`{"serviceName":"bad"}`), nil).JSON(t, &c2)
		if c2["count"] != c["count"] {
			t.Fatal("a refused subscription was stored")
		}
	})
	t.Run("an authenticated user's subscription gets its user id", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "u", "channel": "sms", "userChannelId": "1"}, apitest.SMUser("carol")...).Expect(t, 200)
		if r.Map(t)["userId"] != "carol" {
			t.Fatalf("body %s", r.Body)
		}
	})
}

func TestSubscriptionDuplicateDetection(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"subscription": map[string]any{"detectDuplicatedSubscription": true}}}})
	t.Run("subscription tokens stay untouched in the duplicated-subscription message", func(t *testing.T) {
		seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "dupTok", "value": map[string]any{
			"duplicatedSubscriptionNotification": map[string]any{"email": map[string]any{"from": "a@b.c", "subject": "dup", "textBody": "dup {subscription::name} {service_name}"}},
		}})
		seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "dupTok", "channel": "email", "userChannelId": "d@foo.com", "state": "confirmed"})
		e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "dupTok", "channel": "email", "userChannelId": "D@foo.com", "data": map[string]any{"name": "Mallory"}}, apitest.Anonymous...).Expect(t, 200)
		m := e.WaitMail(t, 1)[0]
		if strings.TrimSpace(m.Text) != "dup {subscription::name} dupTok" || m.Subject != "dup" {
			t.Fatalf("got %q %q", m.Subject, m.Text)
		}
	})
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "Foo@Bar.com", "state": "confirmed", "confirmationRequest": map[string]any{"sendRequest": false}})
	before := len(e.Mail.Mails())
	e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "foo@bar.com", "data": map[string]any{"x": "y"}}, apitest.Anonymous...).Expect(t, 200)
	m := e.WaitMail(t, before+1)[before]
	if m.Envelope.To[0] != "foo@bar.com" {
		t.Fatalf("duplicate message to %v", m.Envelope.To)
	}
	if m.Subject != "Duplicated Subscription" || !strings.Contains(m.Text, "duplicated subscription was submitted") {
		t.Fatalf("got %q %q", m.Subject, m.Text)
	}
	var c map[string]float64
	e.Do(t, "GET", "/api/subscriptions/count?where="+q(`{"state":"unconfirmed"}`), nil).JSON(t, &c)
	if c["count"] != 2 {
		t.Fatalf("the new unconfirmed records should still be saved: %v", c)
	}
}

func TestSubscriptionEncryptedConfirmationCode(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	block, _ := pem.Decode([]byte(apitest.RSAPublicKey()))
	pk, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, pk.(*rsa.PublicKey), []byte("enc@foo.com 98765"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := e.Do(t, "POST", "/api/subscriptions", map[string]any{
		"serviceName": "enc", "channel": "email", "userChannelId": "ignored@foo.com",
		"confirmationRequest": map[string]any{"confirmationCodeEncrypted": base64.StdEncoding.EncodeToString(ct), "sendRequest": false},
	}, apitest.Anonymous...).Expect(t, 200)
	id := r.Map(t)["id"].(string)
	s := sub(t, e, id)
	if s["userChannelId"] != "enc@foo.com" || s["confirmationRequest"].(map[string]any)["confirmationCode"] != "98765" {
		t.Fatalf("stored %v", s)
	}
	e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=98765", nil, apitest.Anonymous...).Expect(t, 200)

	t.Run("garbage ciphertext is 400", func(t *testing.T) {
		e.Do(t, "POST", "/api/subscriptions", map[string]any{
			"serviceName": "enc", "channel": "email", "userChannelId": "x@foo.com",
			"confirmationRequest": map[string]any{"confirmationCodeEncrypted": "bm90IGVuY3J5cHRlZA=="},
		}, apitest.Anonymous...).Expect(t, http.StatusBadRequest)
	})
}

func TestSubscriptionPerServiceConfiguration(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "custom", "value": map[string]any{
		"confirmationRequest": map[string]any{"email": map[string]any{"subject": "Custom confirm", "textBody": "code {confirmation_code}"}},
	}})
	e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "custom", "channel": "email", "userChannelId": "c@foo.com"}, apitest.Anonymous...).Expect(t, 200)
	m := e.WaitMail(t, 1)[0]
	if m.Subject != "Custom confirm" || !regexp.MustCompile(`^code \d{5}`).MatchString(m.Text) || m.From == "" {
		t.Fatalf("merged config not used: %q %q from %q", m.Subject, m.Text, m.From)
	}
}

func TestSubscriptionUpdate(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	s := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userId": "bar", "userChannelId": "bar@foo.com", "state": "confirmed", "confirmationRequest": map[string]any{"sendRequest": false}})
	id := s["id"].(string)

	t.Run("a SiteMinder user changes its address: state unconfirmed and a new confirmation is sent", func(t *testing.T) {
		r := e.Do(t, "PATCH", "/api/subscriptions/"+id, map[string]any{"userChannelId": "baz@foo.com", "state": "confirmed", "serviceName": "other"}, apitest.SMUser("bar")...).Expect(t, http.StatusOK)
		m := r.Map(t)
		if m["state"] != "unconfirmed" || m["userChannelId"] != "baz@foo.com" || m["serviceName"] != "myService" {
			t.Fatalf("body %s", r.Body)
		}
		if _, ok := m["confirmationRequest"]; ok {
			t.Fatal("confirmationRequest shown to a user")
		}
		mail := e.WaitMail(t, 1)[0]
		if mail.Envelope.To[0] != "baz@foo.com" {
			t.Fatalf("confirmation to %v", mail.Envelope.To)
		}
	})
	t.Run("another SiteMinder user gets 404", func(t *testing.T) {
		e.Do(t, "PATCH", "/api/subscriptions/"+id, map[string]any{"userChannelId": "x@foo.com"}, apitest.SMUser("baz")...).Expect(t, http.StatusNotFound)
	})
	t.Run("anonymous callers are forbidden", func(t *testing.T) {
		e.Do(t, "PATCH", "/api/subscriptions/"+id, map[string]any{"userChannelId": "x@foo.com"}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("an unknown id is 404", func(t *testing.T) {
		e.Do(t, "PATCH", "/api/subscriptions/000000000000000000000000", map[string]any{"data": map[string]any{}}).Expect(t, http.StatusNotFound)
		e.Do(t, "PATCH", "/api/subscriptions/not-an-id", map[string]any{"data": map[string]any{}}).Expect(t, http.StatusNotFound)
	})
}

func TestSubscriptionReplace(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	s := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "bar@foo.com", "state": "confirmed", "confirmationRequest": map[string]any{"sendRequest": false}})
	id := s["id"].(string)
	t.Run("admins replace a subscription: 200 with the new record, nothing sent", func(t *testing.T) {
		r := e.Do(t, "PUT", "/api/subscriptions/"+id, map[string]any{"serviceName": "myService", "channel": "sms", "userChannelId": "250", "state": "unconfirmed", "confirmationRequest": map[string]any{"sendRequest": true, "textBody": "x"}}).Expect(t, http.StatusOK)
		m := r.Map(t)
		if m["channel"] != "sms" || m["id"] != id || m["unsubscriptionCode"] != nil {
			t.Fatalf("body %s", r.Body)
		}
		if len(e.SMS.Requests()) != 0 || len(e.Mail.Mails()) != 0 {
			t.Fatal("replace sent a message")
		}
	})
	t.Run("anonymous callers are forbidden", func(t *testing.T) {
		e.Do(t, "PUT", "/api/subscriptions/"+id, map[string]any{"serviceName": "x", "channel": "sms", "userChannelId": "1"}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("an unknown id is 404", func(t *testing.T) {
		e.Do(t, "PUT", "/api/subscriptions/000000000000000000000000", map[string]any{"serviceName": "x", "channel": "sms", "userChannelId": "1"}).Expect(t, http.StatusNotFound)
	})
}

func TestSubscriptionVerify(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	mk := func(extra map[string]any) string {
		b := map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "bar@foo.com", "state": "unconfirmed",
			"confirmationRequest": map[string]any{"sendRequest": false, "confirmationCode": "37688"}}
		for k, v := range extra {
			b[k] = v
		}
		return seed(t, e, "/api/subscriptions", b)["id"].(string)
	}
	t.Run("a SiteMinder user verifies its own subscription", func(t *testing.T) {
		id := mk(map[string]any{"userId": "bar"})
		r := e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688", nil, apitest.SMUser("bar")...).Expect(t, http.StatusOK)
		if r.Text() != "You have been subscribed." || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("got %q %q", r.Text(), r.Header.Get("Content-Type"))
		}
		if sub(t, e, id)["state"] != "confirmed" {
			t.Fatal("not confirmed")
		}
	})
	t.Run("an anonymous caller verifies with the code", func(t *testing.T) {
		id := mk(nil)
		e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
		if sub(t, e, id)["state"] != "confirmed" {
			t.Fatal("not confirmed")
		}
	})
	t.Run("a wrong code is 403 with the failure message as text", func(t *testing.T) {
		id := mk(nil)
		r := e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=11111", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		if r.Text() != "Error happened while confirming subscription." || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("got %q", r.Text())
		}
		if sub(t, e, id)["state"] != "unconfirmed" {
			t.Fatal("state changed")
		}
	})
	t.Run("replace=true deletes the other confirmed subscriptions of the address", func(t *testing.T) {
		old := mk(map[string]any{"serviceName": "rep", "state": "confirmed", "userChannelId": "BAR@foo.com"})
		other := mk(map[string]any{"serviceName": "rep", "state": "confirmed", "userChannelId": "xbar@foo.com"})
		id := mk(map[string]any{"serviceName": "rep"})
		e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688&replace=true", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
		if sub(t, e, old)["state"] != "deleted" || sub(t, e, id)["state"] != "confirmed" {
			t.Fatal("replace did not swap the subscriptions")
		}
		if sub(t, e, other)["state"] != "confirmed" {
			t.Fatal("an address merely containing this one was deleted (the original's unanchored match)")
		}
	})
	t.Run("a deleted subscription cannot be verified", func(t *testing.T) {
		id := mk(map[string]any{"state": "deleted"})
		e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("an unknown id is 404", func(t *testing.T) {
		e.Do(t, "GET", "/api/subscriptions/000000000000000000000000/verify?confirmationCode=1", nil, apitest.Anonymous...).Expect(t, http.StatusNotFound)
	})
	t.Run("a configured redirect gets channel, and err on failure", func(t *testing.T) {
		seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "redir", "value": map[string]any{"confirmationAcknowledgements": map[string]any{"redirectUrl": "http://nowhere"}}})
		id := mk(map[string]any{"serviceName": "redir"})
		r := e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=0", nil, apitest.Anonymous...).Expect(t, http.StatusFound)
		// the string form of the original's message-less NestJS exception
		if loc := r.Header.Get("Location"); loc != "http://nowhere?channel=email&err=HttpException%3A%20Http%20Exception" {
			t.Fatalf("location %q", loc)
		}
		r = e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688", nil, apitest.Anonymous...).Expect(t, http.StatusFound)
		if loc := r.Header.Get("Location"); loc != "http://nowhere?channel=email" {
			t.Fatalf("location %q", loc)
		}
	})
}

func TestSubscriptionDelete(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	cr := map[string]any{"sendRequest": false, "confirmationCode": "37688"}
	mine := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userId": "bar", "userChannelId": "bar@foo.com", "state": "confirmed", "confirmationRequest": cr})["id"].(string)
	anon := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "bar@foo.com", "state": "confirmed", "confirmationRequest": cr, "unsubscriptionCode": "50032"})["id"].(string)
	unconf := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "bar@foo.com", "state": "unconfirmed", "confirmationRequest": cr, "unsubscriptionCode": "50032"})["id"].(string)
	seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "redirectAck", "value": map[string]any{"anonymousUnsubscription": map[string]any{"acknowledgements": map[string]any{"onScreen": map[string]any{"redirectUrl": "http://nowhere"}}}}})
	redir := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "redirectAck", "channel": "email", "userChannelId": "bar@foo.com", "state": "confirmed", "unsubscriptionCode": "12345"})["id"].(string)
	redirDeleted := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "redirectAck", "channel": "email", "userChannelId": "bar@foo.com", "state": "deleted", "unsubscriptionCode": "12345"})["id"].(string)

	t.Run("another SiteMinder user gets 404", func(t *testing.T) {
		e.Do(t, "DELETE", "/api/subscriptions/"+mine, nil, apitest.SMUser("baz")...).Expect(t, http.StatusNotFound)
	})
	t.Run("a SiteMinder user unsubscribes its own: 200 text and an acknowledgement mail", func(t *testing.T) {
		r := e.Do(t, "DELETE", "/api/subscriptions/"+mine, nil, apitest.SMUser("bar")...).Expect(t, http.StatusOK)
		if r.Text() != "You have been un-subscribed." || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("got %q", r.Text())
		}
		if sub(t, e, mine)["state"] != "deleted" {
			t.Fatal("not deleted")
		}
		m := e.WaitMail(t, 1)[0]
		if m.Subject != "Un-subscription acknowledgement" || !strings.Contains(m.Text, "service myService") ||
			!strings.Contains(m.Text, e.URL+"/api/subscriptions/"+mine+"/unsubscribe/undo?unsubscriptionCode=") {
			t.Fatalf("ack %q %q", m.Subject, m.Text)
		}
	})
	t.Run("an anonymous caller with a wrong code is 403 with the failure text", func(t *testing.T) {
		r := e.Do(t, "DELETE", "/api/subscriptions/"+anon+"?unsubscriptionCode=11111", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		if r.Text() != "Error happened while un-subscribing." {
			t.Fatalf("got %q", r.Text())
		}
	})
	t.Run("an anonymous caller with a mismatching userChannelId is 403", func(t *testing.T) {
		e.Do(t, "DELETE", "/api/subscriptions/"+anon+"?unsubscriptionCode=50032&userChannelId=other@foo.com", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("an anonymous caller unsubscribes with the code; userChannelId matches ignoring case", func(t *testing.T) {
		e.Do(t, "DELETE", "/api/subscriptions/"+anon+"?unsubscriptionCode=50032&userChannelId=BAR@foo.com", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
		if sub(t, e, anon)["state"] != "deleted" {
			t.Fatal("not deleted")
		}
	})
	t.Run("an unconfirmed subscription cannot be unsubscribed", func(t *testing.T) {
		e.Do(t, "DELETE", "/api/subscriptions/"+unconf+"?unsubscriptionCode=50032", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("a configured redirect answers 302 with the channel", func(t *testing.T) {
		r := e.Do(t, "GET", "/api/subscriptions/"+redir+"/unsubscribe?unsubscriptionCode=12345", nil, apitest.Anonymous...).Expect(t, http.StatusFound)
		if r.Header.Get("Location") != "http://nowhere?channel=email" {
			t.Fatalf("location %q", r.Header.Get("Location"))
		}
		if sub(t, e, redir)["state"] != "deleted" {
			t.Fatal("not deleted")
		}
	})
	t.Run("a configured redirect carries err on failure", func(t *testing.T) {
		r := e.Do(t, "GET", "/api/subscriptions/"+redirDeleted+"/unsubscribe?unsubscriptionCode=12345", nil, apitest.Anonymous...).Expect(t, http.StatusFound)
		if loc := r.Header.Get("Location"); loc != "http://nowhere?channel=email&err=HttpException%3A%20Http%20Exception" {
			t.Fatalf("location %q", loc)
		}
	})
	t.Run("unknown ids are 404", func(t *testing.T) {
		e.Do(t, "DELETE", "/api/subscriptions/000000000000000000000000", nil, apitest.Anonymous...).Expect(t, http.StatusNotFound)
		e.Do(t, "GET", "/api/subscriptions/zzz/unsubscribe", nil, apitest.Anonymous...).Expect(t, http.StatusNotFound)
	})
}

func TestSubscriptionBulkUnsubscribeAndUndo(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	mk := func(svc, code string) string {
		return seed(t, e, "/api/subscriptions", map[string]any{"serviceName": svc, "channel": "email", "userChannelId": "bar@foo.com", "state": "confirmed", "unsubscriptionCode": code})["id"].(string)
	}
	t.Run("additionalServices=_all unsubscribes every service and the acknowledgement names them", func(t *testing.T) {
		ids := []string{mk("myService1", "12345"), mk("myService2", "54321"), mk("myService3", "11111")}
		e.Do(t, "GET", "/api/subscriptions/"+ids[0]+"/unsubscribe?unsubscriptionCode=12345&additionalServices=_all", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
		for _, id := range ids {
			if sub(t, e, id)["state"] != "deleted" {
				t.Fatalf("%s not deleted", id)
			}
		}
		ua := sub(t, e, ids[0])["unsubscribedAdditionalServices"].(map[string]any)
		if len(ua["names"].([]any)) != 3 || len(ua["ids"].([]any)) != 3 {
			t.Fatalf("unsubscribedAdditionalServices %v", ua)
		}
		m := e.WaitMail(t, 1)[0]
		if !regexp.MustCompile(`services myService\d, myService\d and myService\d`).MatchString(m.Text) {
			t.Fatalf("ack %q", m.Text)
		}

		t.Run("undo restores them all and clears the record", func(t *testing.T) {
			r := e.Do(t, "GET", "/api/subscriptions/"+ids[0]+"/unsubscribe/undo?unsubscriptionCode=12345", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
			if r.Text() != "You have been re-subscribed." {
				t.Fatalf("got %q", r.Text())
			}
			for _, id := range ids {
				if sub(t, e, id)["state"] != "confirmed" {
					t.Fatalf("%s not restored", id)
				}
			}
			if _, ok := sub(t, e, ids[0])["unsubscribedAdditionalServices"]; ok {
				t.Fatal("unsubscribedAdditionalServices kept")
			}
		})
	})
	t.Run("one additional service by name", func(t *testing.T) {
		a, b, c := mk("svcA", "1"), mk("svcB", "2"), mk("svcC", "3")
		e.Do(t, "GET", "/api/subscriptions/"+a+"/unsubscribe?unsubscriptionCode=1&additionalServices=svcB", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
		if sub(t, e, b)["state"] != "deleted" || sub(t, e, c)["state"] != "confirmed" {
			t.Fatal("wrong services unsubscribed")
		}
	})
	t.Run("additional services in the repeated and [] forms", func(t *testing.T) {
		a, b, c := mk("svcD", "1"), mk("svcE", "2"), mk("svcF", "3")
		e.Do(t, "GET", "/api/subscriptions/"+a+"/unsubscribe?unsubscriptionCode=1&additionalServices[]=svcE&additionalServices[]=svcF", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
		if sub(t, e, b)["state"] != "deleted" || sub(t, e, c)["state"] != "deleted" {
			t.Fatal("not unsubscribed")
		}
	})
	t.Run("the bracketed JSON array form of version 1 is 400 naming the repeated form", func(t *testing.T) {
		a := mk("svcG", "1")
		r := e.Do(t, "GET", "/api/subscriptions/"+a+"/unsubscribe?unsubscriptionCode=1&additionalServices="+q(`["svcE","svcF"]`), nil, apitest.Anonymous...).Expect(t, http.StatusBadRequest)
		if !strings.Contains(r.Map(t)["message"].(string), "additionalServices=") {
			t.Fatalf("message %s", r.Body)
		}
		if sub(t, e, a)["state"] != "confirmed" {
			t.Fatal("changed despite the 400")
		}
	})
	t.Run("undo with a wrong code is 403", func(t *testing.T) {
		id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "u1", "channel": "email", "userChannelId": "bar@foo.com", "state": "deleted", "unsubscriptionCode": "12345"})["id"].(string)
		r := e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe/undo?unsubscriptionCode=99999", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		if r.Text() != "Error happened while re-subscribing." {
			t.Fatalf("got %q", r.Text())
		}
	})
	t.Run("undo of a subscription that is not deleted is 403", func(t *testing.T) {
		id := mk("u2", "12345")
		e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe/undo?unsubscriptionCode=12345", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("undo by an authenticated user is refused: users never see deleted subscriptions (404)", func(t *testing.T) {
		id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "u3", "channel": "email", "userChannelId": "bar@foo.com", "state": "deleted", "unsubscriptionCode": "12345"})["id"].(string)
		e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe/undo?unsubscriptionCode=12345", nil, apitest.SMUser("whoever")...).Expect(t, http.StatusNotFound)
	})
	t.Run("undo redirects when configured", func(t *testing.T) {
		seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "u4", "value": map[string]any{"anonymousUndoUnsubscription": map[string]any{"redirectUrl": "http://nowhere"}}})
		id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "u4", "channel": "email", "userChannelId": "bar@foo.com", "state": "deleted", "unsubscriptionCode": "12345"})["id"].(string)
		r := e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe/undo?unsubscriptionCode=12345", nil, apitest.Anonymous...).Expect(t, http.StatusFound)
		if r.Header.Get("Location") != "http://nowhere?channel=email" {
			t.Fatalf("location %q", r.Header.Get("Location"))
		}
		// undo's failure redirect carries the exception's message only
		r = e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe/undo?unsubscriptionCode=12345", nil, apitest.Anonymous...).Expect(t, http.StatusFound)
		if loc := r.Header.Get("Location"); loc != "http://nowhere?channel=email&err=Http%20Exception" {
			t.Fatalf("location %q", loc)
		}
	})
}

func TestSubscriptionServices(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "b", "channel": "email", "userChannelId": "1@x.y", "state": "confirmed"})
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "a", "channel": "email", "userChannelId": "2@x.y", "state": "confirmed"})
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "a", "channel": "email", "userChannelId": "3@x.y", "state": "confirmed"})
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "c", "channel": "email", "userChannelId": "4@x.y", "state": "unconfirmed"})
	t.Run("admins get the distinct names of services with confirmed subscriptions", func(t *testing.T) {
		var names []string
		e.Do(t, "GET", "/api/subscriptions/services", nil).Expect(t, 200).JSON(t, &names)
		if strings.Join(names, ",") != "a,b" {
			t.Fatalf("names %v", names)
		}
	})
	t.Run("anonymous callers are forbidden", func(t *testing.T) {
		e.Do(t, "GET", "/api/subscriptions/services", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
}

func TestSubscriptionSwift(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	mk := func(phone string) string {
		return seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "myService", "channel": "sms", "userChannelId": phone, "state": "confirmed", "unsubscriptionCode": "12345"})["id"].(string)
	}
	t.Run("a reply with the subscription id as Reference unsubscribes it", func(t *testing.T) {
		id := mk("12345")
		r := e.Do(t, "POST", "/api/subscriptions/swift", map[string]any{"Reference": id, "PhoneNumber": "999", "notifyBCSwiftKey": "12345"}, apitest.Anonymous...).Expect(t, http.StatusOK)
		if r.Text() != "You have been un-subscribed." || sub(t, e, id)["state"] != "deleted" {
			t.Fatalf("got %q", r.Text())
		}
	})
	t.Run("a reply found by phone number, dashes and country code optional", func(t *testing.T) {
		id := mk("250-555-1234")
		e.Do(t, "POST", "/api/subscriptions/swift", map[string]any{"PhoneNumber": "12505551234", "notifyBCSwiftKey": "12345"}, apitest.Anonymous...).Expect(t, http.StatusOK)
		if sub(t, e, id)["state"] != "deleted" {
			t.Fatal("not unsubscribed")
		}
	})
	t.Run("a longer number that contains the sender's is not matched", func(t *testing.T) {
		id := mk("9912345678")
		r := e.Do(t, "POST", "/api/subscriptions/swift", map[string]any{"PhoneNumber": "12345678", "notifyBCSwiftKey": "12345"}, apitest.Anonymous...).Expect(t, http.StatusOK)
		if r.Text() != "ok" || sub(t, e, id)["state"] != "confirmed" {
			t.Fatalf("got %q", r.Text())
		}
	})
	t.Run("no matching subscription answers ok", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/subscriptions/swift", map[string]any{"PhoneNumber": "7777777", "notifyBCSwiftKey": "12345"}, apitest.Anonymous...).Expect(t, http.StatusOK)
		if r.Text() != "ok" {
			t.Fatalf("got %q", r.Text())
		}
	})
	t.Run("a wrong shared key is 403", func(t *testing.T) {
		id := mk("555")
		e.Do(t, "POST", "/api/subscriptions/swift", map[string]any{"Reference": id, "notifyBCSwiftKey": "nope"}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		if sub(t, e, id)["state"] != "confirmed" {
			t.Fatal("unsubscribed with a wrong key")
		}
	})
}

func TestSubscriptionAcknowledgementMerge(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "falsy", "value": map[string]any{
		"anonymousUnsubscription": map[string]any{"acknowledgements": map[string]any{"notification": map[string]any{"email": map[string]any{
			"from": "no_reply@invalid.local", "subject": "bye {service_name}",
			"textBody": "n={subscription::n} f={subscription::f} e=[{subscription::e}] missing={subscription::nope} \\{literal\\} {http_host}",
		}}}},
	}})
	id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "falsy", "channel": "email", "userChannelId": "f@foo.com", "state": "confirmed", "unsubscriptionCode": "1",
		"data": map[string]any{"n": 0, "f": false, "e": ""}})["id"].(string)

	t.Run("0, false and empty values are merged; unknown paths stay; escapes are kept literal; http_host keeps the port", func(t *testing.T) {
		e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe?unsubscriptionCode=1", nil, apitest.Anonymous...).Expect(t, 200)
		m := e.WaitMail(t, 1)[0]
		want := "n=0 f=false e=[] missing={subscription::nope} {literal} " + e.URL
		if strings.TrimSpace(m.Text) != want || m.Subject != "bye falsy" {
			t.Fatalf("got %q / %q, want %q", m.Subject, m.Text, want)
		}
	})
}

func TestSubscriptionOneClickUnsubscribe(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "email", "userChannelId": "o@foo.com", "state": "confirmed", "unsubscriptionCode": "424242"})["id"].(string)
	t.Run("RFC 8058 one-click POST to the unsubscribe URL needs the code", func(t *testing.T) {
		e.Do(t, "POST", "/api/subscriptions/"+id+"/unsubscribe?unsubscriptionCode=1", "List-Unsubscribe=One-Click", apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "POST", "/api/subscriptions/"+id+"/unsubscribe?unsubscriptionCode=424242", "List-Unsubscribe=One-Click", apitest.Anonymous...).Expect(t, http.StatusOK)
		if sub(t, e, id)["state"] != "deleted" {
			t.Fatal("not unsubscribed")
		}
	})
}

func TestSubscriptionConfirmationFailure(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	e.SMS.SetStatus(http.StatusBadRequest)
	t.Run("a confirmation that cannot be sent is 502 and leaves no subscription behind", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "sms", "userChannelId": "250"}, apitest.Anonymous...).Expect(t, http.StatusBadGateway)
		if msg := r.Map(t)["message"].(string); !strings.Contains(msg, "could not be sent") {
			t.Fatalf("message %q", msg)
		}
		var c map[string]float64
		e.Do(t, "GET", "/api/subscriptions/count", nil).JSON(t, &c)
		if c["count"] != 0 {
			t.Fatalf("count %v", c)
		}
	})
}

func TestSubscriptionMoreRules(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	t.Run("an anonymous caller cannot choose the unsubscription code; unknown fields are kept", func(t *testing.T) {
		id := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "m", "channel": "sms", "userChannelId": "1", "unsubscriptionCode": "11111", "favourite": "blue"}, apitest.Anonymous...).Expect(t, 200).Map(t)["id"].(string)
		s := sub(t, e, id)
		if s["unsubscriptionCode"] == "11111" || s["favourite"] != "blue" {
			t.Fatalf("stored %v", s)
		}
	})
	t.Run("admins undo without a code", func(t *testing.T) {
		id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "m", "channel": "email", "userChannelId": "u@foo.com", "state": "deleted", "unsubscriptionCode": "5"})["id"].(string)
		e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe/undo", nil).Expect(t, 200)
		if sub(t, e, id)["state"] != "confirmed" {
			t.Fatal("not restored")
		}
	})
	t.Run("admins unsubscribe without a code", func(t *testing.T) {
		id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "m", "channel": "email", "userChannelId": "u@foo.com", "state": "confirmed", "unsubscriptionCode": "5"})["id"].(string)
		e.Do(t, "DELETE", "/api/subscriptions/"+id, nil).Expect(t, 200)
		if sub(t, e, id)["state"] != "deleted" {
			t.Fatal("not deleted")
		}
	})
	t.Run("a SiteMinder user cannot verify another user's subscription: 404", func(t *testing.T) {
		id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "m", "channel": "email", "userId": "bar", "userChannelId": "u@foo.com", "confirmationRequest": map[string]any{"confirmationCode": "1"}})["id"].(string)
		e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=1", nil, apitest.SMUser("baz")...).Expect(t, http.StatusNotFound)
	})
}

func TestRestAPIRoot(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"restApiRoot": "/v1"}}})
	t.Run("every route and the links in messages follow restApiRoot", func(t *testing.T) {
		e.Do(t, "GET", "/v1/health", nil).Expect(t, 200)
		// Outside the moved root, /api/health is no route: as in the
		// original, a GET there is the web console's page.
		if r := e.Do(t, "GET", "/api/health", nil).Expect(t, 200); !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET /api/health outside restApiRoot: %s", r.Header.Get("Content-Type"))
		}
		e.Do(t, "POST", "/api/subscriptions", map[string]any{}).Expect(t, http.StatusNotFound)
		e.Do(t, "POST", "/v1/subscriptions", map[string]any{"serviceName": "r", "channel": "email", "userChannelId": "r@foo.com", "unsubscriptionCode": "9",
			"confirmationRequest": map[string]any{"from": "a@b.c", "sendRequest": true, "confirmationCode": "1", "textBody": "{subscription_confirmation_url}"}}).Expect(t, 200)
		m := e.WaitMail(t, 1)[0]
		if !strings.HasPrefix(strings.TrimSpace(m.Text), e.URL+"/v1/subscriptions/") {
			t.Fatalf("text %q", m.Text)
		}
		if paths := e.Do(t, "GET", "/v1/explorer-json", nil).Expect(t, 200).Map(t)["paths"].(map[string]any); paths["/v1/subscriptions"] == nil {
			t.Fatal("document does not follow restApiRoot")
		}
	})
}

func TestSubscriptionScalarCasting(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	for _, c := range []struct {
		name  string
		value any
		want  string
	}{
		{"a phone number sent as a JSON number is stored as its digits", 12505551234, "12505551234"},
		{"a small whole number is stored as its digits", 42, "42"},
		{"a fraction is written as JavaScript writes it", 1.5, "1.5"},
		{"a huge number takes JavaScript's exponent form", 1e21, "1e+21"},
		{"a boolean is stored as true or false", true, "true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := e.Do(t, "POST", "/api/subscriptions", map[string]any{
				"serviceName": "cast", "channel": "sms", "userChannelId": c.value, "state": "confirmed",
				"confirmationRequest": map[string]any{"sendRequest": false},
			}).Expect(t, http.StatusOK).Map(t)
			if m["userChannelId"] != c.want {
				t.Fatalf("userChannelId %#v, want %q", m["userChannelId"], c.want)
			}
			if got := sub(t, e, m["id"].(string))["userChannelId"]; got != c.want {
				t.Fatalf("stored %#v, want %q", got, c.want)
			}
		})
	}
	t.Run("PATCH casts a number userChannelId too", func(t *testing.T) {
		id := e.Do(t, "POST", "/api/subscriptions", map[string]any{
			"serviceName": "cast", "channel": "sms", "userChannelId": "1", "state": "confirmed",
			"confirmationRequest": map[string]any{"sendRequest": false},
		}).Expect(t, http.StatusOK).Map(t)["id"].(string)
		m := e.Do(t, "PATCH", "/api/subscriptions/"+id, map[string]any{"userChannelId": 2505550000}).Expect(t, http.StatusOK).Map(t)
		if m["userChannelId"] != "2505550000" {
			t.Fatalf("userChannelId %#v", m["userChannelId"])
		}
	})
	t.Run("an object or array for a string field is still 400 and stores nothing", func(t *testing.T) {
		for _, v := range []any{map[string]any{"a": 1}, []any{"x"}} {
			e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "cast2", "channel": "email", "userChannelId": v}).Expect(t, http.StatusBadRequest)
		}
		if n := e.Do(t, "GET", `/api/subscriptions/count?where={"serviceName":"cast2"}`, nil).Expect(t, http.StatusOK).Map(t)["count"]; n != 0.0 {
			t.Fatalf("count %v", n)
		}
	})
}

func TestRecordTheStoreRefuses(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	// apitest runs on the embedded store, which cannot hold an array
	// directly inside an array; MongoDB refuses other documents (over 100
	// levels deep) the same way, and the original answers both 400.
	t.Run("a record the database refuses is 400 naming why, and nothing is stored", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/subscriptions", `{"serviceName":"refused","channel":"email","userChannelId":"r@example.org","data":{"m":[[1,2],[3,4]]}}`).Expect(t, http.StatusBadRequest)
		if msg, _ := r.Map(t)["message"].(string); !strings.Contains(msg, "nested arrays") {
			t.Fatalf("message %q", msg)
		}
		if n := e.Do(t, "GET", `/api/subscriptions/count?where={"serviceName":"refused"}`, nil).Expect(t, http.StatusOK).Map(t)["count"]; n != 0.0 {
			t.Fatalf("count %v", n)
		}
	})
	t.Run("a change the database refuses is 400 and leaves the record as it was", func(t *testing.T) {
		id := seed(t, e, "/api/configurations", map[string]any{"name": "refused", "value": 1})["id"].(string)
		e.Do(t, "PATCH", "/api/configurations/"+id, `{"value":[[1]]}`).Expect(t, http.StatusBadRequest)
		if v := e.Do(t, "GET", "/api/configurations/"+id, nil).Expect(t, http.StatusOK).Map(t)["value"]; v != 1.0 {
			t.Fatalf("value %v", v)
		}
	})
}
