package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte(`{"status":"ok"}`))
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/moved":
			http.Redirect(w, r, "/ok", http.StatusFound)
		}
	}))
	defer srv.Close()
	cases := []struct {
		name    string
		args    []string
		code    int
		errText string
	}{
		{"a 200 is healthy", []string{srv.URL + "/ok"}, 0, ""},
		{"a 503 is not", []string{srv.URL + "/down"}, 1, "503"},
		{"a redirect is not followed", []string{srv.URL + "/moved"}, 1, "302"},
		{"nothing listening is not healthy", []string{"http://127.0.0.1:1/api/health"}, 1, "healthcheck"},
		{"a URL is required", nil, 2, "govkit healthcheck: which URL?"},
		{"only http(s) URLs", []string{"file:///etc/passwd"}, 2, "not an http(s) URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runCapture(append([]string{"healthcheck"}, c.args...)...)
			if code != c.code || !strings.Contains(errOut, c.errText) {
				t.Fatalf("exit %d (stderr %q), want %d and %q", code, errOut, c.code, c.errText)
			}
		})
	}
}
