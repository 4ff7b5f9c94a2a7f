package inbound_test

import (
	"fmt"
	"net/smtp"
	"testing"
)

// BenchmarkBounceOverSMTP sends hard bounces to the running service over
// one SMTP connection, each to one of 50 subscriptions: every iteration is
// a whole SMTP transaction, the MIME parse and rules, the subscription
// lookup, the lock and the bounce record's read and write in the embedded
// store (FerretDB on SQLite, in the same process).
func BenchmarkBounceOverSMTP(b *testing.B) {
	e := start(b, map[string]any{"email": map[string]any{"bounce": map[string]any{"unsubThreshold": 1e9}}})
	var addrs, readers []string
	for i := range 50 {
		reader := fmt.Sprintf("reader%d@example.com", i)
		id := e.Do(b, "POST", "/api/subscriptions", map[string]any{
			"serviceName": "roads", "channel": "email", "userChannelId": reader, "state": "confirmed", "unsubscriptionCode": "12345",
		}).Expect(b, 200).Map(b)["id"].(string)
		addrs = append(addrs, "bn-"+id+"-12345@invalid.local")
		readers = append(readers, reader)
	}
	c, err := smtp.Dial(e.smtpAddr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mx.sender.test"); err != nil {
		b.Fatal(err)
	}
	msgs := make([]string, len(addrs))
	for i := range addrs {
		msgs[i] = dsn(addrs[i], readers[i], "5.1.1")
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % len(addrs)
		if err := c.Mail(""); err != nil {
			b.Fatal(err)
		}
		if err := c.Rcpt(addrs[k]); err != nil {
			b.Fatal(err)
		}
		w, err := c.Data()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Write([]byte(msgs[k])); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "bounces/s")
}
