package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/httpapi"
)

// runProduction starts `notify serve` (Run) under NODE_ENV=production on
// config, calls during with the service's URL, stops it and returns the
// log.
func runProduction(t *testing.T, configJSON string, during func(url string)) string {
	t.Helper()
	dir := deployment(t, map[string]string{"src/config.production.json": configJSON})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- httpapi.Run(ctx, httpapi.RunOptions{Dir: dir, DataDir: t.TempDir(), Env: map[string]string{"NODE_ENV": "production"}, Log: logs, RSABits: 2048,
			Ready: func(url string) { ready <- url }})
	}()
	select {
	case url := <-ready:
		during(url)
	case err := <-done:
		t.Fatalf("Run: %v\n%s", err, logs.String())
	case <-time.After(90 * time.Second):
		t.Fatal("not ready")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	return logs.String()
}

// TestProductionSaysWhatGivesAwayTheAdminAddress: `notify serve` under
// NODE_ENV=production refuses adminIps that cover every address, and
// warns at start about admin addresses shared with a proxy and about a
// missing httpHost, and at run time, once, about forwarding headers from
// a peer that is not a trusted proxy — each a configuration that recreates
// a finding of the second hostile review.
func TestProductionSaysWhatGivesAwayTheAdminAddress(t *testing.T) {
	const base = `"host": "127.0.0.1", "port": 0, "queue": {"connection": null}, "email": {"smtp": {"host": "127.0.0.1", "port": 1}, "inboundSmtpServer": {"enabled": false}}`

	t.Run("adminIps covering every address refuse to start", func(t *testing.T) {
		for _, all := range []string{"0.0.0.0/0", "::/0"} {
			dir := deployment(t, map[string]string{"src/config.production.json": `{` + base + `, "adminIps": ["` + all + `"]}`})
			err := httpapi.Run(context.Background(), httpapi.RunOptions{Dir: dir, DataDir: t.TempDir(), Env: map[string]string{"NODE_ENV": "production"}, Log: &syncBuffer{}})
			if err == nil || !strings.Contains(err.Error(), "adminIps") || !strings.Contains(err.Error(), "every caller") {
				t.Fatalf("%s: err %v", all, err)
			}
		}
	})

	t.Run("NotifyBC's defaults start, with warnings; forwarding headers from an untrusted peer are warned about once", func(t *testing.T) {
		log := runProduction(t, `{`+base+`}`, func(url string) {
			for range 3 {
				req, _ := http.NewRequest("GET", url+"/api/administrators/whoami", nil)
				req.Header.Set("X-Forwarded-For", "203.0.113.9")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
		})
		for _, want := range []string{"adminIps and siteMinderReverseProxyIps share 127.0.0.1/32", "httpHost is not set"} {
			if !strings.Contains(log, want) {
				t.Errorf("no warning %q in the log:\n%s", want, log)
			}
		}
		if n := strings.Count(log, "forwarding headers (X-Forwarded-For, Forwarded) arrive from an address that is not in trustedReverseProxyIps"); n != 1 {
			t.Errorf("the forwarding warning was logged %d times, want once:\n%s", n, log)
		}
	})

	t.Run("a deployment that keeps admin addresses apart from its proxies starts without them (control)", func(t *testing.T) {
		log := runProduction(t, `{`+base+`, "httpHost": "https://notify.example.org", "adminIps": ["10.1.0.0/16"], "siteMinderReverseProxyIps": ["10.9.9.9"], "trustedReverseProxyIps": ["10.2.0.0/16", "127.0.0.1"]}`, func(url string) {
			req, _ := http.NewRequest("GET", url+"/api/health", nil)
			req.Header.Set("X-Forwarded-For", "203.0.113.9") // from a trusted proxy
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
		if strings.Contains(log, "security:") || strings.Contains(log, "forwarding headers") {
			t.Errorf("warnings for a sound configuration:\n%s", log)
		}
	})
}

func TestCheckAuthority(t *testing.T) {
	cases := []struct {
		name    string
		tree    map[string]any
		nodeEnv string
		warn    []string
		refuse  string
	}{
		{"an admin range that holds a trusted proxy", map[string]any{"httpHost": "https://n.example", "adminIps": []any{"10.0.0.0/8"}, "trustedReverseProxyIps": []any{"10.2.3.4"}, "siteMinderReverseProxyIps": []any{}}, "production",
			[]string{"adminIps and trustedReverseProxyIps share 10.0.0.0/8"}, ""},
		{"a proxy range that holds an admin address", map[string]any{"httpHost": "https://n.example", "adminIps": []any{"10.2.3.4"}, "siteMinderReverseProxyIps": []any{"10.0.0.0/8"}}, "production",
			[]string{"adminIps and siteMinderReverseProxyIps share 10.2.3.4/32"}, ""},
		{"IPv6 everyone is refused", map[string]any{"adminIps": []any{"::1", "::/0"}}, "production", nil, "::/0"},
		{"outside production nothing is said (NotifyBC's evaluation image)", map[string]any{"adminIps": []any{"0.0.0.0/0"}}, "development", nil, ""},
		{"a sound configuration says nothing", map[string]any{"httpHost": "https://n.example", "adminIps": []any{"10.1.0.0/16"}, "siteMinderReverseProxyIps": []any{}}, "production", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.New(c.tree)
			if err != nil {
				t.Fatal(err)
			}
			warnings, err := httpapi.CheckAuthority(cfg, c.nodeEnv)
			if c.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), c.refuse) {
					t.Fatalf("err %v, want one naming %s", err, c.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != len(c.warn) {
				t.Fatalf("warnings %q, want %q", warnings, c.warn)
			}
			for i, w := range c.warn {
				if !strings.Contains(warnings[i], w) {
					t.Fatalf("warning %q, want one with %q", warnings[i], w)
				}
			}
		})
	}
}
