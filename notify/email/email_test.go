package email_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-message"
	gomail "github.com/emersion/go-message/mail"
	"github.com/emersion/go-smtp"

	"github.com/govkit/govkit/notify/email"
)

var quiet = email.WithLogger(slog.New(slog.DiscardHandler))

func newSender(t testing.TB, cfg email.SMTPConfig, opts email.Addressing, o ...email.Option) *email.Sender {
	t.Helper()
	s, err := email.New(cfg, opts, append([]email.Option{quiet}, o...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func sinkConfig(t testing.TB, s *sink) email.SMTPConfig {
	host, _, _ := net.SplitHostPort(s.addr)
	return email.SMTPConfig{Host: host, Port: s.port(t), ConnectionTimeout: 5 * time.Second, SocketTimeout: 10 * time.Second}
}

// parsed is a received message read back with go-message.
type parsed struct {
	header      message.Header
	contentType string
	parts       map[string]string // leaf content type -> decoded body
}

func parse(t *testing.T, data []byte) parsed {
	t.Helper()
	e, err := message.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("received message does not parse: %v\n%s", err, data)
	}
	p := parsed{header: e.Header, parts: map[string]string{}}
	p.contentType, _, _ = e.Header.ContentType()
	err = e.Walk(func(_ []int, ent *message.Entity, err error) error {
		if err != nil {
			return err
		}
		ct, _, _ := ent.Header.ContentType()
		if strings.HasPrefix(ct, "multipart/") {
			return nil
		}
		b, err := io.ReadAll(ent.Body)
		// The line end before SMTP's final dot belongs to the transport.
		p.parts[ct] = strings.TrimSuffix(string(b), "\r\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func pushMessage() email.Message {
	return email.Message{
		From:    "Notify BC <no_reply@example.org>",
		To:      "alice@example.com",
		Subject: "Road closure — Highway 1",
		Text:    "Highway 1 is closed.",
		HTML:    "<p>Highway 1 is <b>closed</b>.</p>",
		Push: &email.Push{
			ListID:             email.ListID("https://notify.example.org", "road closures"),
			UnsubscribeURL:     "https://notify.example.org/api/subscriptions/65a1/unsubscribe?unsubscriptionCode=12345",
			SubscriptionID:     "65a1",
			UnsubscriptionCode: "12345",
		},
	}
}

func TestPushMailOverRealSMTP(t *testing.T) {
	s := startSink(t, "127.0.0.1", nil)
	snd := newSender(t, sinkConfig(t, s), email.Addressing{InboundDomain: "inbound.example.org", Bounce: true, ListUnsubscribeByEmail: true})
	if err := snd.Send(context.Background(), pushMessage()); err != nil {
		t.Fatal(err)
	}
	msgs := s.messages()
	if len(msgs) != 1 {
		t.Fatalf("sink got %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.From != "bn-65a1-12345@inbound.example.org" {
		t.Errorf("MAIL FROM = %q, want the VERP bounce address", m.From)
	}
	if len(m.To) != 1 || m.To[0] != "alice@example.com" {
		t.Errorf("RCPT TO = %q", m.To)
	}
	p := parse(t, m.Data)
	h := gomail.Header{Header: p.header}
	from, err := h.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Address != "no_reply@example.org" || from[0].Name != "Notify BC" {
		t.Errorf("From = %v (%v), want the configured sender, not the bounce address", from, err)
	}
	to, err := h.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Address != "alice@example.com" {
		t.Errorf("To = %v (%v)", to, err)
	}
	if subj, _ := h.Subject(); subj != "Road closure — Highway 1" {
		t.Errorf("Subject = %q", subj)
	}
	if got, want := p.header.Get("List-Id"), "<https://notify.example.org/road%20closures>"; got != want {
		t.Errorf("List-Id = %q, want %q", got, want)
	}
	wantUnsub := "<mailto:un-65a1-12345@inbound.example.org>, <https://notify.example.org/api/subscriptions/65a1/unsubscribe?unsubscriptionCode=12345>"
	if got := headerLine(m.Data, "List-Unsubscribe"); got != wantUnsub {
		t.Errorf("List-Unsubscribe = %q, want %q", got, wantUnsub)
	}
	if got := p.header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post = %q", got)
	}
	if p.contentType != "multipart/alternative" {
		t.Errorf("Content-Type = %q, want multipart/alternative", p.contentType)
	}
	if p.parts["text/plain"] != "Highway 1 is closed." || p.parts["text/html"] != "<p>Highway 1 is <b>closed</b>.</p>" {
		t.Errorf("parts = %q", p.parts)
	}
	if p.header.Get("Message-Id") == "" || p.header.Get("Date") == "" {
		t.Error("Message-ID and Date must be set")
	}
}

func TestPushAddressing(t *testing.T) {
	s := startSink(t, "127.0.0.1", nil)
	cfg := sinkConfig(t, s)
	const url = "https://notify.example.org/api/subscriptions/65a1/unsubscribe?unsubscriptionCode=12345"
	cases := []struct {
		name         string
		opts         email.Addressing
		edit         func(*email.Message)
		wantEnvelope string
		wantUnsub    string
		wantPost     bool
		wantListID   bool
	}{
		{
			name:         "bounce off keeps From as envelope sender",
			opts:         email.Addressing{InboundDomain: "in.example.org", ListUnsubscribeByEmail: true},
			wantEnvelope: "no_reply@example.org",
			wantUnsub:    "<mailto:un-65a1-12345@in.example.org>, <" + url + ">",
			wantPost:     true, wantListID: true,
		},
		{
			name:         "no inbound domain means no mailto and no VERP",
			opts:         email.Addressing{Bounce: true, ListUnsubscribeByEmail: true},
			wantEnvelope: "no_reply@example.org",
			wantUnsub:    "<" + url + ">",
			wantPost:     true, wantListID: true,
		},
		{
			name:         "list-unsubscribe by email off leaves only the URL",
			opts:         email.Addressing{InboundDomain: "in.example.org", Bounce: true},
			wantEnvelope: "bn-65a1-12345@in.example.org",
			wantUnsub:    "<" + url + ">",
			wantPost:     true, wantListID: true,
		},
		{
			name:         "first of a comma-separated inbound domain list is used",
			opts:         email.Addressing{InboundDomain: "a.example.org, b.example.org", Bounce: true, ListUnsubscribeByEmail: true},
			wantEnvelope: "bn-65a1-12345@a.example.org",
			wantUnsub:    "<mailto:un-65a1-12345@a.example.org>, <" + url + ">",
			wantPost:     true, wantListID: true,
		},
		{
			name:         "confirmation mail without push data has no list headers",
			opts:         email.Addressing{InboundDomain: "in.example.org", Bounce: true, ListUnsubscribeByEmail: true},
			edit:         func(m *email.Message) { m.Push = nil },
			wantEnvelope: "no_reply@example.org",
		},
		{
			name:         "no subscription id means no un- or bn- address",
			opts:         email.Addressing{InboundDomain: "in.example.org", Bounce: true, ListUnsubscribeByEmail: true},
			edit:         func(m *email.Message) { m.Push.SubscriptionID = "" },
			wantEnvelope: "no_reply@example.org",
			wantUnsub:    "<" + url + ">",
			wantPost:     true, wantListID: true,
		},
		{
			name: "plain http unsubscribe URL still gets one-click",
			opts: email.Addressing{},
			edit: func(m *email.Message) {
				m.Push.UnsubscribeURL = "http://localhost:3000/api/subscriptions/65a1/unsubscribe"
			},
			wantEnvelope: "no_reply@example.org",
			wantUnsub:    "<http://localhost:3000/api/subscriptions/65a1/unsubscribe>",
			wantPost:     true, wantListID: true,
		},
		{
			name:         "line breaks in merged values cannot add headers",
			opts:         email.Addressing{},
			edit:         func(m *email.Message) { m.Push.UnsubscribeURL = url + "\r\nBcc: eve@example.com" },
			wantEnvelope: "no_reply@example.org",
			wantUnsub:    "<" + url + "Bcc:eve@example.com>",
			wantPost:     true, wantListID: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.messages())
			snd := newSender(t, cfg, tc.opts)
			m := pushMessage()
			if tc.edit != nil {
				tc.edit(&m)
			}
			if err := snd.Send(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			got := s.messages()[before]
			if got.From != tc.wantEnvelope {
				t.Errorf("MAIL FROM = %q, want %q", got.From, tc.wantEnvelope)
			}
			if u := headerLine(got.Data, "List-Unsubscribe"); u != tc.wantUnsub {
				t.Errorf("List-Unsubscribe = %q, want %q", u, tc.wantUnsub)
			}
			if post := headerLine(got.Data, "List-Unsubscribe-Post") != ""; post != tc.wantPost {
				t.Errorf("List-Unsubscribe-Post present = %v, want %v", post, tc.wantPost)
			}
			if id := headerLine(got.Data, "List-Id") != ""; id != tc.wantListID {
				t.Errorf("List-Id present = %v, want %v", id, tc.wantListID)
			}
			if headerLine(got.Data, "Bcc") != "" || len(got.To) != 1 {
				t.Errorf("an injected header or recipient got through: %q", got.To)
			}
			if headerLine(got.Data, "From") == "" || !strings.Contains(headerLine(got.Data, "From"), "no_reply@example.org") {
				t.Errorf("From header = %q", headerLine(got.Data, "From"))
			}
		})
	}
}

func TestBodies(t *testing.T) {
	s := startSink(t, "127.0.0.1", nil)
	snd := newSender(t, sinkConfig(t, s), email.Addressing{})
	cases := []struct {
		name, text, html, wantType string
		wantParts                  map[string]string
	}{
		{"text only is a text/plain mail", "hello", "", "text/plain", map[string]string{"text/plain": "hello"}},
		{"html only is a text/html mail", "", "<i>hi</i>", "text/html", map[string]string{"text/html": "<i>hi</i>"}},
		{"text and html are alternatives", "hello", "<i>hi</i>", "multipart/alternative", map[string]string{"text/plain": "hello", "text/html": "<i>hi</i>"}},
		{"non-ASCII text survives encoding", "Café — ünïcode ✓", "", "text/plain", map[string]string{"text/plain": "Café — ünïcode ✓"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.messages())
			err := snd.Send(context.Background(), email.Message{From: "a@example.org", To: "b@example.org", Subject: tc.name, Text: tc.text, HTML: tc.html})
			if err != nil {
				t.Fatal(err)
			}
			p := parse(t, s.messages()[before].Data)
			if p.contentType != tc.wantType {
				t.Errorf("Content-Type = %q, want %q", p.contentType, tc.wantType)
			}
			if fmt.Sprint(p.parts) != fmt.Sprint(tc.wantParts) {
				t.Errorf("parts = %q, want %q", p.parts, tc.wantParts)
			}
		})
	}
}

func plain(to string) email.Message {
	return email.Message{From: "no_reply@example.org", To: to, Subject: "s", Text: "t"}
}

func TestPooling(t *testing.T) {
	cases := []struct {
		name  string
		cfg   func(*email.SMTPConfig)
		sends int
		want  []int // messages per SMTP session
	}{
		{"one pooled connection carries every message", func(c *email.SMTPConfig) { c.MaxConnections = 1 }, 5, []int{5}},
		{"maxMessages retires a connection after that many messages", func(c *email.SMTPConfig) { c.MaxConnections = 1; c.MaxMessages = 2 }, 5, []int{2, 2, 1}},
		{"pool false opens a connection per message", func(c *email.SMTPConfig) { c.DisablePool = true }, 3, []int{1, 1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startSink(t, "127.0.0.1", nil)
			cfg := sinkConfig(t, s)
			tc.cfg(&cfg)
			snd := newSender(t, cfg, email.Addressing{})
			for i := 0; i < tc.sends; i++ {
				if err := snd.Send(context.Background(), plain(fmt.Sprintf("u%d@example.com", i))); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.perSession(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("messages per session = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConcurrentSendsStayWithinMaxConnections(t *testing.T) {
	s := startSink(t, "127.0.0.1", nil)
	cfg := sinkConfig(t, s)
	cfg.MaxConnections = 3
	snd := newSender(t, cfg, email.Addressing{})
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- snd.Send(context.Background(), plain(fmt.Sprintf("u%d@example.com", i)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := len(s.messages()); got != n {
		t.Errorf("sink got %d messages, want %d", got, n)
	}
	if peak := s.peakSessions(); peak > 3 || peak < 1 {
		t.Errorf("peak concurrent SMTP sessions = %d, want 1..3", peak)
	}
	seen := map[string]bool{}
	for _, m := range s.messages() {
		seen[m.To[0]] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct recipients, want %d (a message was lost or duplicated)", len(seen), n)
	}
}

func TestRejections(t *testing.T) {
	s := startSink(t, "127.0.0.1", func(s *sink) {
		s.rcptReply = map[string]*smtp.SMTPError{
			"nobody@example.com": {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user"},
			"busy@example.com":   {Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Try again later"},
		}
	})
	cfg := sinkConfig(t, s)
	cfg.MaxConnections = 1
	snd := newSender(t, cfg, email.Addressing{})
	cases := []struct {
		name          string
		to            string
		wantPermanent bool
		wantCode      int
		wantEnhanced  string
	}{
		{"a 5xx reply is permanent", "nobody@example.com", true, 550, "5.1.1"},
		{"a 4xx reply is transient", "busy@example.com", false, 451, "4.3.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := snd.Send(context.Background(), plain(tc.to))
			var se *email.SendError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SendError", err)
			}
			if se.Permanent != tc.wantPermanent || email.IsPermanent(err) != tc.wantPermanent {
				t.Errorf("permanent = %v, want %v (%v)", se.Permanent, tc.wantPermanent, err)
			}
			if se.Code != tc.wantCode || se.EnhancedCode != tc.wantEnhanced || se.Stage != email.StageSend {
				t.Errorf("code %d %q stage %q, want %d %q send", se.Code, se.EnhancedCode, se.Stage, tc.wantCode, tc.wantEnhanced)
			}
			if !strings.Contains(err.Error(), "5.1.1") && !strings.Contains(err.Error(), "4.3.0") {
				t.Errorf("error does not carry the server's reply: %v", err)
			}
		})
	}
	t.Run("the connection stays usable after a rejection", func(t *testing.T) {
		if err := snd.Send(context.Background(), plain("ok@example.com")); err != nil {
			t.Fatal(err)
		}
		if got := len(s.perSession()); got != 1 {
			t.Errorf("%d sessions carried mail, want 1", got)
		}
	})
}

func TestMultiAddressHost(t *testing.T) {
	// Only 127.0.0.2 listens; 127.0.0.1 on the same port refuses.
	s := startSink(t, "127.0.0.2", nil)
	var lookups []string
	var mu sync.Mutex
	lookup := func(addrs ...string) email.Option {
		return email.WithLookupHost(func(_ context.Context, host string) ([]string, error) {
			mu.Lock()
			lookups = append(lookups, host)
			mu.Unlock()
			return addrs, nil
		})
	}
	cfg := sinkConfig(t, s)
	cfg.Host = "smtp.example.test"

	t.Run("a refused address is followed by the next one", func(t *testing.T) {
		snd := newSender(t, cfg, email.Addressing{}, lookup("127.0.0.1", "127.0.0.2"))
		if err := snd.Send(context.Background(), plain("a@example.com")); err != nil {
			t.Fatal(err)
		}
		if len(s.messages()) != 1 {
			t.Fatalf("sink got %d messages, want 1", len(s.messages()))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(lookups) == 0 || lookups[0] != "smtp.example.test" {
			t.Errorf("lookups = %q, want the configured host name", lookups)
		}
	})
	t.Run("every address refused is a transient connect error naming the host", func(t *testing.T) {
		snd := newSender(t, cfg, email.Addressing{}, lookup("127.0.0.1", "127.0.0.3"))
		err := snd.Send(context.Background(), plain("a@example.com"))
		var se *email.SendError
		if !errors.As(err, &se) || se.Stage != email.StageConnect || se.Permanent {
			t.Fatalf("err = %v, want a transient connect SendError", err)
		}
		for _, want := range []string{"smtp.example.test", "127.0.0.1", "127.0.0.3"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %s", err, want)
			}
		}
	})
	t.Run("an IP address is not resolved", func(t *testing.T) {
		mu.Lock()
		lookups = nil
		mu.Unlock()
		ipCfg := cfg
		ipCfg.Host = "127.0.0.2"
		snd := newSender(t, ipCfg, email.Addressing{}, lookup("192.0.2.1"))
		if err := snd.Send(context.Background(), plain("b@example.com")); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(lookups) != 0 {
			t.Errorf("resolved %q for an IP host", lookups)
		}
	})
}

func TestDroppedPooledConnectionIsReplaced(t *testing.T) {
	s := startSink(t, "127.0.0.1", nil)
	cfg := sinkConfig(t, s)
	cfg.MaxConnections = 1
	snd := newSender(t, cfg, email.Addressing{})
	if err := snd.Send(context.Background(), plain("a@example.com")); err != nil {
		t.Fatal(err)
	}
	s.dropConnections()
	if err := snd.Send(context.Background(), plain("b@example.com")); err != nil {
		t.Fatalf("send after the server dropped the idle connection: %v", err)
	}
	if got := s.perSession(); fmt.Sprint(got) != "[1 1]" {
		t.Errorf("messages per session = %v, want [1 1]", got)
	}
}

func TestAuthentication(t *testing.T) {
	s := startSink(t, "127.0.0.1", func(s *sink) { s.auth = "notify:s3cret" })
	cases := []struct {
		name          string
		user, pass    string
		wantErr       bool
		wantPermanent bool
	}{
		{"right credentials are accepted", "notify", "s3cret", false, false},
		{"wrong password is a permanent connect error", "notify", "wrong", true, true},
		{"no credentials is refused by the server", "", "", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sinkConfig(t, s)
			cfg.User, cfg.Pass = tc.user, tc.pass
			snd := newSender(t, cfg, email.Addressing{})
			err := snd.Send(context.Background(), plain("a@example.com"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && email.IsPermanent(err) != tc.wantPermanent {
				t.Errorf("permanent = %v, want %v: %v", email.IsPermanent(err), tc.wantPermanent, err)
			}
			if err != nil && strings.Contains(err.Error(), tc.pass) && tc.pass != "" {
				t.Errorf("error reveals the password: %v", err)
			}
		})
	}
}

func TestEHLOName(t *testing.T) {
	s := startSink(t, "127.0.0.1", nil)
	cfg := sinkConfig(t, s)
	cfg.Name = "notify.example.org"
	snd := newSender(t, cfg, email.Addressing{})
	if err := snd.Send(context.Background(), plain("a@example.com")); err != nil {
		t.Fatal(err)
	}
	if got := s.messages()[0].Helo; got != "notify.example.org" {
		t.Errorf("EHLO name = %q, want the configured name", got)
	}
}

func TestCredentialsNeverCrossAnUnencryptedConnection(t *testing.T) {
	s := startSink(t, "127.0.0.1", func(s *sink) { s.auth = "u:p" })
	cfg := sinkConfig(t, s)
	cfg.Host = "smtp.example.test" // a remote name, not loopback
	cfg.User, cfg.Pass = "u", "p"
	snd := newSender(t, cfg, email.Addressing{}, email.WithLookupHost(func(context.Context, string) ([]string, error) { return []string{"127.0.0.1"}, nil }))
	err := snd.Send(context.Background(), plain("a@example.com"))
	if err == nil || !strings.Contains(err.Error(), "unencrypted") {
		t.Fatalf("err = %v, want a refusal to authenticate without TLS", err)
	}
	if len(s.messages()) != 0 {
		t.Error("mail was delivered")
	}
}

func TestTLS(t *testing.T) {
	cert, _, caPEM := selfSigned(t)
	tlsCfg := &tlsConfigT{cert: cert}
	t.Run("STARTTLS is required and verified against the configured CA", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := serveSink(t, l, func(s *sink) { s.auth = "u:p" }, tlsCfg.server())
		cfg := sinkConfig(t, s)
		cfg.Host = "smtp.example.test"
		cfg.RequireTLS = true
		cfg.User, cfg.Pass = "u", "p"
		cfg.TLS.CA = []string{caPEM}
		snd := newSender(t, cfg, email.Addressing{}, email.WithLookupHost(func(context.Context, string) ([]string, error) { return []string{"127.0.0.1"}, nil }))
		if err := snd.Send(context.Background(), plain("a@example.com")); err != nil {
			t.Fatal(err)
		}
		if len(s.messages()) != 1 {
			t.Fatal("message not delivered")
		}
	})
	t.Run("an untrusted certificate fails the connection", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := serveSink(t, l, nil, tlsCfg.server())
		cfg := sinkConfig(t, s)
		cfg.RequireTLS = true
		snd := newSender(t, cfg, email.Addressing{})
		err = snd.Send(context.Background(), plain("a@example.com"))
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("err = %v, want a certificate error", err)
		}
		if len(s.messages()) != 0 {
			t.Error("message delivered over an untrusted connection")
		}
	})
	t.Run("secure connects with TLS from the first byte", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := serveSink(t, tlsListener(l, tlsCfg.server()), nil, nil)
		cfg := sinkConfig(t, s)
		cfg.Secure = true
		cfg.TLS.CA = []string{caPEM}
		snd := newSender(t, cfg, email.Addressing{})
		if err := snd.Send(context.Background(), plain("a@example.com")); err != nil {
			t.Fatal(err)
		}
		if len(s.messages()) != 1 {
			t.Fatal("message not delivered")
		}
	})
}

func TestInvalidMessageIsPermanent(t *testing.T) {
	s := startSink(t, "127.0.0.1", nil)
	snd := newSender(t, sinkConfig(t, s), email.Addressing{})
	cases := []struct {
		name string
		m    email.Message
	}{
		{"unparseable From", email.Message{From: "not an address", To: "a@example.com", Text: "x"}},
		{"no recipient", email.Message{From: "a@example.org", Text: "x"}},
		{"unparseable To", email.Message{From: "a@example.org", To: "@@", Text: "x"}},
		{"a list of recipients", email.Message{From: "a@example.org", To: "a@example.com, b@example.com", Text: "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := snd.Send(context.Background(), tc.m)
			var se *email.SendError
			if !errors.As(err, &se) || !se.Permanent || se.Stage != email.StageMessage || !errors.Is(err, email.ErrInvalidMessage) {
				t.Fatalf("err = %v, want a permanent invalid-message error", err)
			}
		})
	}
	if len(s.messages()) != 0 {
		t.Error("an invalid message reached the server")
	}
}

func TestClosedSenderRefuses(t *testing.T) {
	s := startSink(t, "127.0.0.1", nil)
	snd := newSender(t, sinkConfig(t, s), email.Addressing{})
	if err := snd.Send(context.Background(), plain("a@example.com")); err != nil {
		t.Fatal(err)
	}
	_ = snd.Close()
	if err := snd.Send(context.Background(), plain("a@example.com")); !errors.Is(err, email.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func TestNewRequiresHost(t *testing.T) {
	if _, err := email.New(email.SMTPConfig{}, email.Addressing{}); err == nil || !strings.Contains(err.Error(), "email.smtp.host") {
		t.Fatalf("err = %v, want one naming email.smtp.host", err)
	}
}

func TestListID(t *testing.T) {
	cases := []struct{ name, host, service, want string }{
		{"plain names are kept", "http://localhost:3000", "myService", "http://localhost:3000/myService"},
		{"spaces and slashes are escaped like encodeURIComponent", "https://n.example.org", "a b/c", "https://n.example.org/a%20b%2Fc"},
		{"encodeURIComponent's unreserved marks are kept", "https://n", "x-_.!~*'()", "https://n/x-_.!~*'()"},
		{"non-ASCII is UTF-8 percent-encoded", "https://n", "café", "https://n/caf%C3%A9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := email.ListID(tc.host, tc.service); got != tc.want {
				t.Errorf("ListID = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestContextEndsASend(t *testing.T) {
	stall := make(chan struct{})
	s := startSink(t, "127.0.0.1", func(s *sink) { s.stall = stall })
	t.Cleanup(func() { close(stall) })
	snd := newSender(t, sinkConfig(t, s), email.Addressing{})

	t.Run("an already cancelled context sends nothing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := snd.Send(ctx, plain("a@example.com")); !errors.Is(err, context.Canceled) || email.IsPermanent(err) {
			t.Fatalf("err = %v, want a transient context.Canceled", err)
		}
	})
	t.Run("a deadline stops waiting for a server that does not answer", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := snd.Send(ctx, plain("a@example.com"))
		if !errors.Is(err, context.DeadlineExceeded) || email.IsPermanent(err) {
			t.Fatalf("err = %v, want a transient context.DeadlineExceeded", err)
		}
	})
}
