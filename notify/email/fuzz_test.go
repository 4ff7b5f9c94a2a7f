package email

import (
	"bytes"
	"strings"
	"testing"

	"github.com/emersion/go-message"
)

// FuzzPushHeaders checks that whatever mail merge puts into a push mail's
// list data, the mail still parses and gains no header, recipient or
// envelope sender it should not have.
func FuzzPushHeaders(f *testing.F) {
	f.Add("https://n.example.org/roads", "https://n.example.org/api/subscriptions/1/unsubscribe?c=1", "65a1", "12345", "in.example.org")
	f.Add("x\r\nBcc: eve@example.com", "u\nTo: eve@example.com", "a@b", "1>2", "d,e")
	f.Add("", "mailto:x@y", "", "", "")
	f.Fuzz(func(t *testing.T, listID, url, id, code, domain string) {
		o := Addressing{InboundDomain: domain, Bounce: true, ListUnsubscribeByEmail: true}
		msg, err := o.build(Message{From: "no_reply@example.org", To: "alice@example.com", Subject: "s", Text: "t",
			Push: &Push{ListID: listID, UnsubscribeURL: url, SubscriptionID: id, UnsubscriptionCode: code}})
		if err != nil {
			return // refused before sending: nothing can be injected
		}
		rcpts, err := msg.GetRecipients()
		if err != nil || len(rcpts) != 1 || strings.Trim(rcpts[0], "<>") != "alice@example.com" {
			t.Fatalf("recipients = %q (%v)", rcpts, err)
		}
		sender, err := msg.GetSender(false)
		sender = strings.Trim(sender, "<>")
		if err != nil || (sender != "no_reply@example.org" && !strings.HasPrefix(sender, "bn-")) {
			t.Fatalf("envelope sender = %q (%v)", sender, err)
		}
		var buf bytes.Buffer
		if _, err := msg.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		e, err := message.Read(&buf)
		if e == nil {
			t.Fatalf("mail does not parse: %v", err)
		}
		allowed := map[string]bool{"Date": true, "Message-Id": true, "Mime-Version": true, "From": true, "To": true, "Subject": true,
			"Content-Type": true, "Content-Transfer-Encoding": true, "List-Id": true, "List-Unsubscribe": true, "List-Unsubscribe-Post": true}
		fields := e.Header.Fields()
		counts := map[string]int{}
		for fields.Next() {
			k := fields.Key()
			counts[k]++
			if !allowed[k] || counts[k] > 1 {
				t.Fatalf("unexpected header %q in\n%s", k, buf.String())
			}
		}
	})
}
