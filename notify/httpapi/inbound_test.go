package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/httpapi"
)

// freePort returns a loopback port nobody listens on at the moment, for
// config that names a port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// sendMail delivers body over SMTP, failing t on any refusal.
func sendMail(t *testing.T, addr, from, to, body string) {
	t.Helper()
	if err := smtp.SendMail(addr, nil, from, []string{to}, []byte(body)); err != nil {
		t.Fatalf("SMTP to %s: %v", addr, err)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func postJSON(t *testing.T, url string, body any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %v", url, resp.StatusCode, out)
	}
	return out
}

func TestRunServesInboundSMTP(t *testing.T) {
	port := freePort(t)
	dir := deployment(t, map[string]string{
		"src/config.local.json": fmt.Sprintf(`{"host": "127.0.0.1", "port": 0, "email": {"smtp": {"host": "127.0.0.1", "port": 1},
			"inboundSmtpServer": {"domain": "bounces.example.org", "listeningSmtpPort": %d}}}`, port),
	})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() {
		done <- httpapi.Run(ctx, httpapi.RunOptions{Dir: dir, DataDir: t.TempDir(), Env: map[string]string{}, Log: logs, RSABits: 2048,
			Ready: func(addr string) { ready <- addr }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var base string
	select {
	case base = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("not ready")
	}
	// Requests from 127.0.0.1 are super admin (the default adminIps).
	sub := postJSON(t, base+"/api/subscriptions", map[string]any{
		"serviceName": "roads", "channel": "email", "userChannelId": "reader@example.com", "state": "confirmed", "unsubscriptionCode": "24680",
	})
	id := sub["id"].(string)
	smtpAddr := fmt.Sprintf("127.0.0.1:%d", port)
	sendMail(t, smtpAddr, "reader@example.com", "un-"+id+"-24680@bounces.example.org", "Subject: unsubscribe\r\n\r\nunsubscribe\r\n")
	var subs []map[string]any
	getJSON(t, base+"/api/subscriptions", &subs)
	if len(subs) != 1 || subs[0]["state"] != "deleted" {
		t.Fatalf("after list-unsubscribe mail: %v", subs)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := scrape(t, string(metrics), `notify_inbound_mails_total{kind="unsubscribe"}`); got != 1 {
		t.Errorf("inbound unsubscribe mails counted %v, want 1", got)
	}
	if !strings.Contains(logs.String(), `"service":"inbound SMTP"`) {
		t.Errorf("the log does not say where inbound SMTP listens:\n%s", logs.String())
	}
}

func TestRunRefusesBadInboundConfig(t *testing.T) {
	dir := deployment(t, map[string]string{
		"src/config.local.json": `{"host": "127.0.0.1", "port": 0, "email": {"bounce": {"smtpStatusCodeRegex": "5\\.(?=\\d)"}}}`,
	})
	err := httpapi.Run(context.Background(), httpapi.RunOptions{Dir: dir, DataDir: t.TempDir(), Env: map[string]string{}, Log: io.Discard, RSABits: 2048})
	if err == nil || !strings.Contains(err.Error(), "email.bounce.smtpStatusCodeRegex") {
		t.Fatalf("Run: %v", err)
	}
}

func TestStartDevInboundSMTP(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())
	var out bytes.Buffer
	d, err := httpapi.StartDev(context.Background(), httpapi.DevOptions{DataDir: t.TempDir(), Host: "127.0.0.1", RSABits: 2048, InboundSMTPPort: takenPort}, &out)
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
	t.Run("a taken port falls back to a free one, with a warning naming the flag", func(t *testing.T) {
		if d.InboundSMTP == "" || d.InboundSMTP == taken.Addr().String() {
			t.Fatalf("inbound SMTP at %q", d.InboundSMTP)
		}
		if !strings.Contains(out.String(), "--inbound-smtp-port") || !regexp.MustCompile(`inbound SMTP +`+regexp.QuoteMeta(d.InboundSMTP)).MatchString(out.String()) {
			t.Fatalf("output:\n%s", out.String())
		}
	})
	t.Run("push mail carries the bounce address and a bounce to it is recorded", func(t *testing.T) {
		postJSON(t, d.URL+"/api/subscriptions", map[string]any{
			"serviceName": "dev", "channel": "email", "userChannelId": "dev@example.org", "state": "confirmed", "unsubscriptionCode": "13579",
		})
		postJSON(t, d.URL+"/api/notifications", map[string]any{
			"serviceName": "dev", "channel": "email", "isBroadcast": true,
			"message": map[string]any{"from": "no_reply@example.org", "subject": "hello", "textBody": "hi"},
		})
		var mails []struct {
			Envelope struct{ From string } `json:"envelope"`
		}
		getJSON(t, d.MailURL+"api/mails", &mails)
		if len(mails) != 1 || !strings.HasPrefix(mails[0].Envelope.From, "bn-") || !strings.HasSuffix(mails[0].Envelope.From, "-13579@"+httpapi.DevInboundDomain) {
			t.Fatalf("caught %+v", mails)
		}
		bn := mails[0].Envelope.From
		sendMail(t, d.InboundSMTP, "", bn, "From: MAILER-DAEMON@example.net\r\nSubject: Undelivered\r\nContent-Type: text/plain\r\n\r\n<dev@example.org>: 550 5.1.1 no such user\r\n")
		var bounces []map[string]any
		getJSON(t, d.URL+"/api/bounces", &bounces)
		if len(bounces) != 1 || bounces[0]["hardBounceCount"] != 1.0 || bounces[0]["userChannelId"] != "dev@example.org" {
			t.Fatalf("bounces %v", bounces)
		}
	})
}
