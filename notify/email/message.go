package email

import (
	"fmt"
	"net/url"
	"strings"

	mail "github.com/wneessen/go-mail"
)

// Message is one mail to send. At least one of Text and HTML should be set;
// with both, the mail is multipart/alternative.
type Message struct {
	// From is the From header, e.g. "no_reply@invalid.local" or
	// "Service <no_reply@example.org>"; also the envelope sender unless the
	// bounce address of a Push replaces it.
	From string
	// To is the one recipient (a subscription's userChannelId). Unlike
	// nodemailer, a comma-separated list is refused: a userChannelId names
	// one mailbox, and a list would let one subscription mail several.
	To      string
	Subject string
	Text    string
	HTML    string
	// Push is set for push notifications only.
	Push *Push
}

// Push is what a push notification adds to a mail: list headers and the
// bounce (VERP) envelope sender. See the package documentation.
type Push struct {
	// ListID is the List-Id value without angle brackets; build it with
	// ListID(httpHost, serviceName).
	ListID string
	// UnsubscribeURL is the merged {unsubscription_url}.
	UnsubscribeURL string
	// SubscriptionID and UnsubscriptionCode name the subscription in the
	// un-… and bn-… addresses. When SubscriptionID is empty (a unicast sent
	// with skipSubscriptionConfirmationCheck and no subscription) neither
	// address is used: the original would write "undefined" into them.
	SubscriptionID     string
	UnsubscriptionCode string
}

// Addressing holds the service settings that decide a push mail's addresses.
type Addressing struct {
	// InboundDomain is email.inboundSmtpServer.domain. The inbound server
	// accepts a comma-separated list; outbound mail uses the first entry.
	InboundDomain string
	// Bounce is email.bounce.enabled: use the bn-… envelope sender.
	Bounce bool
	// ListUnsubscribeByEmail is email.listUnsubscribeByEmail.enabled: add
	// the un-… mailto to List-Unsubscribe.
	ListUnsubscribeByEmail bool
}

func (o Addressing) domain() string {
	d, _, _ := strings.Cut(o.InboundDomain, ",")
	return strings.TrimSpace(d)
}

// ListID builds the List-Id of a service's push mail as the original does:
// the HTTP host, a slash, and the URI-component-encoded service name.
func ListID(httpHost, serviceName string) string {
	return httpHost + "/" + EncodeURIComponent(serviceName)
}

// EncodeURIComponent escapes s exactly as JavaScript's encodeURIComponent,
// which the original uses for service names in List-Id.
func EncodeURIComponent(s string) string {
	const unreserved = "-_.!~*'()"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(unreserved, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// headerSafe drops what could end a header line or a <…> item: line
// breaks, angle brackets and white space (nodemailer strips the last two
// from list URLs too).
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\r', '\n', '<', '>', ' ', '\t':
			return -1
		}
		return r
	}, s)
}

// addressPart keeps an address local part or domain to characters that
// cannot break the address or the header it is written in.
func addressPart(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r <= ' ', r == '<', r == '>', r == '@', r == ',', r == '"', r == '(', r == ')', r == ';', r == ':', r == '\\', r == '[', r == ']', r == 0x7f:
			return -1
		}
		return r
	}, s)
}

// build turns a Message into a go-mail Msg with the headers and envelope
// sender the options call for.
func (o Addressing) build(m Message) (*mail.Msg, error) {
	msg := mail.NewMsg(mail.WithNoDefaultUserAgent())
	if err := msg.From(m.From); err != nil {
		return nil, fmt.Errorf("%w: from %q: %v", ErrInvalidMessage, m.From, err)
	}
	if strings.TrimSpace(m.To) == "" {
		return nil, fmt.Errorf("%w: no recipient", ErrInvalidMessage)
	}
	if err := msg.To(strings.TrimSpace(m.To)); err != nil {
		return nil, fmt.Errorf("%w: to %q: %v", ErrInvalidMessage, m.To, err)
	}
	msg.Subject(m.Subject)
	switch {
	case m.Text != "" && m.HTML != "":
		msg.SetBodyString(mail.TypeTextPlain, m.Text)
		msg.AddAlternativeString(mail.TypeTextHTML, m.HTML)
	case m.HTML != "":
		msg.SetBodyString(mail.TypeTextHTML, m.HTML)
	default:
		msg.SetBodyString(mail.TypeTextPlain, m.Text)
	}
	if m.Push == nil {
		return msg, nil
	}
	p := m.Push
	if id := headerSafe(p.ListID); id != "" {
		msg.SetGenHeaderPreformatted("List-Id", "<"+id+">")
	}
	domain := addressPart(o.domain())
	id, code := addressPart(p.SubscriptionID), addressPart(p.UnsubscriptionCode)
	var unsub []string
	if o.ListUnsubscribeByEmail && domain != "" && id != "" {
		unsub = append(unsub, "mailto:un-"+id+"-"+code+"@"+domain)
	}
	u := headerSafe(p.UnsubscribeURL)
	if u != "" {
		unsub = append(unsub, u)
	}
	if len(unsub) > 0 {
		msg.SetListUnsubscribe(unsub...)
	}
	// One-click (RFC 8058) needs an http(s) URL to POST to; receivers act
	// only on https, but the header is kept for http so development mail
	// looks like production mail.
	if pu, err := url.Parse(u); err == nil && (pu.Scheme == "https" || pu.Scheme == "http") && pu.Host != "" {
		msg.SetListUnsubscribePost()
	}
	if o.Bounce && domain != "" && id != "" {
		if err := msg.EnvelopeFrom("bn-" + id + "-" + code + "@" + domain); err != nil {
			return nil, fmt.Errorf("%w: bounce address: %v", ErrInvalidMessage, err)
		}
	}
	return msg, nil
}
