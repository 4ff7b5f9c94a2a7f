package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/httpapi"
)

func TestStartDev(t *testing.T) {
	var out bytes.Buffer
	d, err := httpapi.StartDev(context.Background(), httpapi.DevOptions{DataDir: t.TempDir(), Host: "127.0.0.1", RSABits: 2048}, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	t.Run("prints the API, explorer and mail page URLs", func(t *testing.T) {
		for _, want := range []string{d.URL + "/api", d.URL + "/api/explorer", d.MailURL} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %s:\n%s", want, out.String())
			}
		}
	})
	t.Run("a confirmation request lands in the mail catcher page", func(t *testing.T) {
		req, _ := http.NewRequest("POST", d.URL+"/api/subscriptions", strings.NewReader(`{"serviceName":"dev","channel":"email","userChannelId":"dev@example.org"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("is_anonymous", "true")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("create %d", resp.StatusCode)
		}
		resp, err = http.Get(d.MailURL + "api/mails")
		if err != nil {
			t.Fatal(err)
		}
		var mails []map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&mails)
		resp.Body.Close()
		if len(mails) != 1 || mails[0]["subject"] != "Subscription confirmation" {
			t.Fatalf("caught %v", mails)
		}
		resp, err = http.Get(d.MailURL)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(page), "Subscription confirmation") {
			t.Fatal("mail page does not list the mail")
		}
	})
}
