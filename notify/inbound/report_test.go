package inbound

import (
	"errors"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/config"
)

// dsn builds a delivery status notification (RFC 3464) of the usual shape:
// a human-readable part, the machine-readable status and the headers of
// the returned mail.
func dsn(subject, extraHeader, human, recipient, status string) string {
	return "From: MAILER-DAEMON@mx.example.net\r\n" +
		"To: bn-65a1b2c3d4e5f60718293a4b-12345@bounce.example.org\r\n" +
		"Subject: " + subject + "\r\n" + extraHeader +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: multipart/report; report-type=delivery-status; boundary=\"=_report\"\r\n" +
		"\r\n" +
		"--=_report\r\n" +
		"Content-Type: text/plain; charset=us-ascii\r\n" +
		"\r\n" + human + "\r\n" +
		"--=_report\r\n" +
		"Content-Type: message/delivery-status\r\n" +
		"\r\n" +
		"Reporting-MTA: dns; mx.example.net\r\n" +
		"\r\n" +
		"Final-Recipient: rfc822; " + recipient + "\r\n" +
		"Action: failed\r\n" +
		"Status: " + status + "\r\n" +
		"\r\n" +
		"--=_report\r\n" +
		"Content-Type: text/rfc822-headers\r\n" +
		"\r\n" +
		"From: no_reply@service.example.org\r\n" +
		"To: " + recipient + "\r\n" +
		"Subject: Road closures\r\n" +
		"\r\n" +
		"--=_report--\r\n"
}

// defaultRules are the default email.bounce rules with subjectRegex.
func defaultRules(tb testing.TB, subject string) rules {
	tb.Helper()
	cfg, err := config.New()
	if err != nil {
		tb.Fatal(err)
	}
	b := cfg.Email.Bounce
	r, err := compileRules(subject, b.SMTPStatusCodeRegex, b.FailedRecipientRegex)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func TestHardBounce(t *testing.T) {
	const addr = "reader@example.com"
	tests := []struct {
		name    string
		subject string // email.bounce.subjectRegex
		msg     string
		hard    bool
	}{
		{"a permanent failure of the subscriber's address counts",
			"", dsn("Undelivered Mail Returned to Sender", "", "The mail could not be delivered.", addr, "5.1.1"), true},
		{"a transient failure does not count",
			"", dsn("Delayed Mail", "", "Mailbox full.", addr, "4.2.2"), false},
		{"a failure of another address does not count",
			"", dsn("Undelivered Mail Returned to Sender", "", "The mail could not be delivered.", "other@example.com", "5.1.1"), false},
		{"the failed recipient is compared ignoring case",
			"", dsn("Undelivered Mail Returned to Sender", "", "x", "Reader@EXAMPLE.com", "5.1.1"), true},
		{"X-Failed-Recipients overrides the address found in the body",
			"", dsn("Mail delivery failed", "X-Failed-Recipients: "+addr+"\r\n", "x", "alias@example.net", "5.1.1"), true},
		{"any address of X-Failed-Recipients may be the subscriber's",
			"", dsn("Mail delivery failed", "X-Failed-Recipients: a@example.net, <"+addr+">\r\n", "x", "a@example.net", "5.1.1"), true},
		{"X-Failed-Recipients naming another address does not count",
			"", dsn("Mail delivery failed", "X-Failed-Recipients: other@example.com\r\n", "x", addr, "5.1.1"), false},
		{"a subject that does not match subjectRegex does not count",
			"^Returned mail", dsn("Out of office", "", "x", addr, "5.1.1"), false},
		{"a subject matching subjectRegex counts",
			"^Returned mail", dsn("Returned mail: see transcript for details", "", "x", addr, "5.1.1"), true},
		{"an encoded subject is matched decoded",
			"^Returned mail", dsn("=?utf-8?q?Returned_mail=3A_user_unknown?=", "", "x", addr, "5.1.1"), true},
		{"the delivery status is read, not the human part",
			"", dsn("Undelivered", "", "Remote said: 550 5.1.1 user unknown", addr, "4.4.7"), false},
		{"without a delivery status the HTML is read before the text",
			"", "Subject: Undeliverable\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n" +
				"--b\r\nContent-Type: text/plain\r\n\r\n550 5.1.1 " + addr + "\r\n" +
				"--b\r\nContent-Type: text/html\r\n\r\n<p>451 4.3.0 " + addr + " try later</p>\r\n--b--\r\n", false},
		{"without a delivery status or HTML the text is read",
			"", "Subject: Undeliverable\r\nContent-Type: text/plain\r\n\r\n<" + addr + ">: 550 5.1.1 no such user\r\n", true},
		{"the returned mail itself is not read",
			"", "Subject: Undeliverable\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
				"--b\r\nContent-Type: text/plain\r\n\r\nDelivery is delayed (4.4.1).\r\n" +
				"--b\r\nContent-Type: message/rfc822\r\n\r\nSubject: x\r\n\r\n550 5.1.1 " + addr + "\r\n--b--\r\n", false},
		{"a base64 delivery status is decoded",
			"", "Subject: failure\r\nContent-Type: multipart/report; boundary=b\r\n\r\n" +
				"--b\r\nContent-Type: message/delivery-status\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
				"RmluYWwtUmVjaXBpZW50OiByZmM4MjI7IHJlYWRlckBleGFtcGxlLmNvbQ0KU3RhdHVzOiA1LjEuMQ0K\r\n--b--\r\n", true},
		{"an unknown charset leaves the text as written",
			"", "Subject: failure\r\nContent-Type: text/plain; charset=x-unheard-of\r\n\r\n550 5.1.1 " + addr + "\r\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := readReport([]byte(tc.msg))
			if err != nil {
				t.Fatalf("readReport: %v", err)
			}
			if got := defaultRules(t, tc.subject).hardBounce(rep, addr); got != tc.hard {
				t.Fatalf("hardBounce = %v, want %v (subject %q, body %q, failed %q)", got, tc.hard, rep.subject, rep.body, rep.failedRecipients)
			}
		})
	}
}

func TestReadReportRefusesMalformedMail(t *testing.T) {
	deep := "Subject: x\r\n"
	for i := range maxPartDepth + 2 {
		b := "b" + strings.Repeat("x", i)
		deep += "Content-Type: multipart/mixed; boundary=" + b + "\r\n\r\n--" + b + "\r\n"
	}
	wide := "Subject: x\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		strings.Repeat("--b\r\nContent-Type: text/plain\r\n\r\nx\r\n", maxParts+1) + "--b--\r\n"
	tests := []struct{ name, msg string }{
		{"a header line without a colon", "this is not a header\r\n\r\nbody\r\n"},
		{"no header at all", "\r\nbody only\r\n"},
		{"an empty message", ""},
		{"a multipart body without a boundary", "Subject: x\r\nContent-Type: multipart/report\r\n\r\n--\r\n"},
		{"a multipart body without its end", "Subject: x\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nx\r\n"},
		{"a part that is not base64", "Subject: x\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n*** not base64 ***\r\n--b--\r\n"},
		{"parts nested too deeply", deep},
		{"too many parts", wide},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := readReport([]byte(tc.msg)); !errors.Is(err, errMalformed) {
				t.Fatalf("readReport: %v, want errMalformed", err)
			}
		})
	}
}

func TestCompileRulesNamesTheKey(t *testing.T) {
	_, err := compileRules("(?<=x)", `5\.\d`, "")
	if err == nil || !strings.Contains(err.Error(), "email.bounce.subjectRegex") {
		t.Fatalf("err %v", err)
	}
	_, err = compileRules("", `5\.(`, "")
	if err == nil || !strings.Contains(err.Error(), "email.bounce.smtpStatusCodeRegex") {
		t.Fatalf("err %v", err)
	}
	r, err := compileRules("", "", "")
	if err != nil || !r.hardBounce(report{body: "anything"}, "a@b") {
		t.Fatalf("empty rules: %v", err)
	}
}

func FuzzReadReport(f *testing.F) {
	f.Add(dsn("Undelivered", "X-Failed-Recipients: a@b.c\r\n", "x", "a@b.c", "5.1.1"))
	f.Add("Subject: x\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nx\r\n--b--\r\n")
	f.Add("Subject: =?utf-8?b?w6k=?=\r\nContent-Type: text/html; charset=iso-8859-1\r\n\r\n<p>5.1.1</p>")
	rules := defaultRules(f, "^Returned")
	f.Fuzz(func(t *testing.T, msg string) {
		rep, err := readReport([]byte(msg))
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v is not errMalformed", err)
			}
			return
		}
		if len(rep.body) > 4*len(msg) {
			t.Fatalf("body of %d bytes from a message of %d", len(rep.body), len(msg))
		}
		_ = rules.hardBounce(rep, "a@b.c")
	})
}

// BenchmarkReadReport parses a typical delivery status notification and
// applies the default rules.
func BenchmarkReadReport(b *testing.B) {
	msg := []byte(dsn("Undelivered Mail Returned to Sender", "", "The mail could not be delivered.", "reader@example.com", "5.1.1"))
	r := defaultRules(b, "")
	b.ReportAllocs()
	for b.Loop() {
		rep, err := readReport(msg)
		if err != nil || !r.hardBounce(rep, "reader@example.com") {
			b.Fatal(err)
		}
	}
}
