package httperr_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/govkit/govkit/internal/httperr"
)

func TestWrite(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		message string
		want    httperr.Body
	}{
		{"reason phrase goes in error, message as given", 403, "System admin access required", httperr.Body{403, "System admin access required", "Forbidden"}},
		{"empty message falls back to the reason phrase", 404, "", httperr.Body{404, "Not Found", "Not Found"}},
		{"429 names Too Many Requests", 429, "slow down", httperr.Body{429, "slow down", "Too Many Requests"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				httperr.Write(w, c.status, c.message)
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d", resp.StatusCode, c.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			var got httperr.Body
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("body %+v, want %+v", got, c.want)
			}
		})
	}
}
