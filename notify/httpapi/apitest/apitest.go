// Package apitest starts a complete notification service for black-box HTTP
// tests: the real server on a loopback listener, the embedded document store
// (one per test binary, a database of its own per test), outbound mail to an
// in-process SMTP server (notify/mailcatcher) whose caught mail tests read,
// and SMS to a loopback fake of Swift's HTTP API that records each request.
//
// The test configuration follows the original's test config where it matters
// (sms provider swift with account key 123, inbound domain invalid.local,
// bounce unsubThreshold 2), except that adminIps is ["127.0.0.1"] so that a
// plain request from the test is SuperAdmin. Other roles are chosen by
// headers, which the access rules honour:
//
//	Anonymous       is_anonymous: true (declines the admin-address rule)
//	SMUser("bob")   sm_user: bob (SiteMinder, trusted from 127.0.0.1)
//	Token(tok)      Authorization: tok (an access token: Admin)
//	Bearer(jwt)     Authorization: Bearer jwt (OIDC)
//
// Use Main from TestMain so the shared store is stopped and its files
// removed when the tests end:
//
//	func TestMain(m *testing.M) { apitest.Main(m) }
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/embeddedmongo"
	"github.com/govkit/govkit/notify/httpapi"
	"github.com/govkit/govkit/notify/mailcatcher"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/sms/provider"
	"github.com/govkit/govkit/notify/subscription"
)

var (
	shared struct {
		once sync.Once
		srv  *embeddedmongo.Server
		dir  string
		err  error
	}
	rsaOnce         sync.Once
	rsaPriv, rsaPub string
	rsaErr          error
)

// Main runs the tests of a package and stops the shared embedded store
// afterwards. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := shared.srv.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "apitest: stop embedded store:", err)
		}
		cancel()
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func storeURI(t testing.TB) string {
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "notify-apitest-")
		if shared.err != nil {
			return
		}
		shared.srv, shared.err = embeddedmongo.Start(context.Background(), embeddedmongo.Config{Dir: shared.dir})
	})
	if shared.err != nil {
		t.Fatalf("embedded store: %v", shared.err)
	}
	return shared.srv.URI()
}

// TestConfig is the configuration every Env starts from; Options.Config
// trees are merged over it.
func TestConfig() map[string]any {
	return map[string]any{
		"adminIps": []any{"127.0.0.1"},
		// the embedded queue backend, one per Env
		"queue": map[string]any{"connection": nil},
		"sms": map[string]any{
			"provider": "swift",
			"providerSettings": map[string]any{
				"swift": map[string]any{"accountKey": "123", "notifyBCSwiftKey": "12345"},
			},
		},
		"email": map[string]any{
			"inboundSmtpServer": map[string]any{"domain": "invalid.local"},
			"bounce":            map[string]any{"unsubThreshold": 2.0},
		},
	}
}

// Options adjust an Env.
type Options struct {
	// Config trees are merged over TestConfig in order.
	Config []map[string]any
	// Logger receives the service's log (default: discarded).
	Logger *slog.Logger
	// Attempts keeps the wrong-code and failed log-in counters (default:
	// in the service's memory); give two Envs one Redis store to test
	// budgets shared by several nodes.
	Attempts ratelimit.Store
	// Cron, when set, runs the scheduled jobs with these options (give a
	// cron.ManualClock that the test moves, or call App.Cron()'s jobs
	// directly).
	Cron *httpapi.CronOptions
	// FerretDBOnPostgres runs the service on a FerretDB over a fresh
	// PostgreSQL database of the test (testsvc.RequireFerretDBOnPostgres),
	// with datasource ferretdbPostgresUri set, instead of the shared
	// embedded store.
	FerretDBOnPostgres bool
}

// Env is a running service under test.
type Env struct {
	// URL is the base URL, e.g. http://127.0.0.1:40123 (the API is under
	// URL + "/api").
	URL    string
	App    *httpapi.App
	Config *config.Config
	Store  *mongostore.Store
	// Mail catches every mail the service sends.
	Mail *mailcatcher.Catcher
	// SMS records every request to the Swift fake.
	SMS *SMSRecorder
	// PostgresURL is the PostgreSQL database under FerretDB (Options
	// FerretDBOnPostgres); "" on the embedded store.
	PostgresURL string
	// Client does not follow redirects, so tests see 302s.
	Client *http.Client
}

// Start starts a service for t and stops it when t ends.
func Start(t testing.TB, o Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := &Env{Mail: mailcatcher.New(mailcatcher.Options{})}
	smtpAddr, stopMail, err := e.Mail.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mail catcher: %v", err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = stopMail(c)
	})
	e.SMS = newSMSRecorder(t)

	trees := []map[string]any{TestConfig(), {"sms": map[string]any{"providerSettings": map[string]any{"swift": map[string]any{"apiUrlPrefix": e.SMS.URL + "/"}}}}}
	trees = append(trees, o.Config...)
	e.Config, err = config.New(trees...)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	host, port, _ := net.SplitHostPort(smtpAddr)
	p, _ := strconv.Atoi(port)
	es, err := email.New(email.SMTPConfig{Host: host, Port: p, IgnoreTLS: true, Name: "localhost"}, email.Addressing{
		InboundDomain:          e.Config.Email.InboundSMTPServer.Domain,
		Bounce:                 e.Config.Email.Bounce.Enabled,
		ListUnsubscribeByEmail: e.Config.Email.ListUnsubscribeByEmail.Enabled,
	})
	if err != nil {
		t.Fatalf("email sender: %v", err)
	}
	t.Cleanup(func() { _ = es.Close() })
	settings, _ := e.Config.Get("sms.providerSettings").(map[string]any)
	ss, _, err := provider.New(e.Config.SMS.Provider, settings, nil)
	if err != nil {
		t.Fatalf("sms sender: %v", err)
	}

	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(testsvc.Unique("nb_" + t.Name()))
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	var cronOpts httpapi.CronOptions
	if o.Cron != nil {
		cronOpts = *o.Cron
	}
	var storeAt, pgURL string
	var embedded *embeddedmongo.Server
	if o.FerretDBOnPostgres {
		storeAt, pgURL = testsvc.RequireFerretDBOnPostgres(t)
		e.PostgresURL = pgURL
	} else {
		storeAt = storeURI(t)
		embedded = shared.srv
	}
	e.App, err = httpapi.OpenApp(ctx, httpapi.AppOptions{
		Config:              e.Config,
		StoreURI:            storeAt,
		FerretDBPostgresURL: pgURL,
		Database:            name,
		Channel:             &channel.Sender{Email: es, SMS: ss},
		Logger:              logger,
		// the key pair is made once per test binary (below), not per test
		RSABits:     -1,
		Attempts:    o.Attempts,
		Embedded:    embedded,
		Cron:        o.Cron != nil,
		CronOptions: cronOpts,
	})
	if err != nil {
		t.Fatalf("open app: %v", err)
	}
	e.Store = e.App.Store
	if embedded != nil {
		if err := embedded.IndexIDs(ctx, name); err != nil {
			t.Fatalf("index ids: %v", err)
		}
	}
	if err := insertRSAKey(ctx, e.App.Subscriptions); err != nil {
		t.Fatalf("rsa key: %v", err)
	}
	srv := httptest.NewServer(e.App.Server)
	e.URL = srv.URL
	e.Client = &http.Client{
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(func() {
		srv.Close()
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Store.DropDatabase(c); err != nil {
			t.Errorf("drop database: %v", err)
		}
		_ = e.App.Close(c)
	})
	return e
}

func insertRSAKey(ctx context.Context, s *subscription.Service) error {
	rsaOnce.Do(func() { rsaPriv, rsaPub, rsaErr = subscription.GenerateRSAKeyPEM(2048) })
	if rsaErr != nil {
		return rsaErr
	}
	return s.PutRSAKey(ctx, rsaPriv, rsaPub)
}

// RSAPublicKey returns the PEM public key every Env's service holds, for
// encrypting confirmation codes.
func RSAPublicKey() string { return rsaPub }

// Headers that choose who a request comes from.
var (
	SuperAdmin = []string{}
	Anonymous  = []string{"is_anonymous", "true"}
)

// SMUser is a SiteMinder user.
func SMUser(name string) []string { return []string{"sm_user", name} }

// Token is an access token holder (Admin).
func Token(tok string) []string { return []string{"Authorization", tok, "is_anonymous", "true"} }

// Bearer is an OIDC token holder.
func Bearer(jwt string) []string {
	return []string{"Authorization", "Bearer " + jwt, "is_anonymous", "true"}
}

// Response is an answer, read in full.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing t when it is not JSON.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("response %d is not JSON (%v): %s", r.Status, err, r.Body)
	}
}

// Map decodes a JSON object body.
func (r *Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// Text returns the body as a string.
func (r *Response) Text() string { return string(r.Body) }

// Do sends a request to path (e.g. "/api/subscriptions") with body
// (nil, a string sent as is, or a value sent as JSON) and header pairs
// ("Host" sets the Host header the request is sent with), and returns
// the answer.
func (e *Env) Do(t testing.TB, method, path string, body any, headers ...string) *Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if http.CanonicalHeaderKey(headers[i]) == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Expect fails t unless r has status.
func (r *Response) Expect(t testing.TB, status int) *Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
	return r
}

// WaitMail waits until at least n mails were caught and returns them,
// oldest first. It fails t after a generous bound: the bound only keeps a
// broken test from hanging, it measures nothing.
func (e *Env) WaitMail(t testing.TB, n int) []mailcatcher.Mail {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ms := e.Mail.Mails()
		if len(ms) >= n {
			out := make([]mailcatcher.Mail, len(ms))
			for i, m := range ms {
				out[len(ms)-1-i] = m
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("caught %d mails, want %d", len(ms), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SMSRequest is one request the Swift fake received.
type SMSRequest struct {
	Path string
	Body map[string]any
}

// SMSRecorder is a loopback fake of Swift's HTTP API.
type SMSRecorder struct {
	URL    string
	mu     sync.Mutex
	status int // answered to every request; SetStatus changes it (default 200)
	reqs   []SMSRequest
}

func newSMSRecorder(t testing.TB) *SMSRecorder {
	r := &SMSRecorder{status: http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(req.Body).Decode(&body)
		r.mu.Lock()
		r.reqs = append(r.reqs, SMSRequest{Path: req.URL.EscapedPath(), Body: body})
		st := r.status
		r.mu.Unlock()
		w.WriteHeader(st)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// SetStatus makes the fake answer status from now on.
func (r *SMSRecorder) SetStatus(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// Requests returns the requests received so far.
func (r *SMSRecorder) Requests() []SMSRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]SMSRequest(nil), r.reqs...)
}
