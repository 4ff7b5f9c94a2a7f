package inbound

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decode bounces in any common charset
	"github.com/emersion/go-message/mail"
)

// A bounce's MIME structure is walked this deep and this wide at most:
// real reports are two or three levels and a handful of parts, and a
// hostile message must not make the server walk a million empty parts.
const (
	maxPartDepth = 8
	maxParts     = 64
)

// errMalformed is a message that cannot be read as MIME.
var errMalformed = errors.New("malformed message")

// report is what the bounce rules look at in a received bounce.
type report struct {
	subject string
	// body is the message/delivery-status part when there is one, else the
	// HTML parts, else the text parts, as the original chooses.
	body string
	// failedRecipients are the addresses of X-Failed-Recipients, when the
	// header is present.
	failedRecipients []string
}

// readReport parses a bounce. Header lines that do not parse, a multipart
// body without its boundary or its end, a body that does not decode from
// its transfer encoding, a structure nested beyond maxPartDepth or
// maxParts, or no header at all, are errMalformed. An unknown charset is
// not: the undecoded text is used.
func readReport(raw []byte) (report, error) {
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil || (err != nil && !lenient(err)) {
		return report{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if e.Header.Len() == 0 {
		return report{}, fmt.Errorf("%w: no header", errMalformed)
	}
	h := mail.Header{Header: e.Header}
	var rep report
	if rep.subject, err = h.Subject(); err != nil {
		rep.subject = h.Get("Subject")
	}
	for _, v := range e.Header.Values("X-Failed-Recipients") {
		for _, a := range strings.Split(v, ",") {
			if a = strings.Trim(strings.TrimSpace(a), "<>"); a != "" {
				rep.failedRecipients = append(rep.failedRecipients, a)
			}
		}
	}
	var b bodies
	parts := 0
	if err := b.walk(e, 0, &parts); err != nil {
		return report{}, err
	}
	switch {
	case b.hasStatus:
		rep.body = b.status.String()
	case b.html.Len() > 0:
		rep.body = b.html.String()
	default:
		rep.body = b.text.String()
	}
	return rep, nil
}

// lenient reports whether a parse error still leaves a usable entity: an
// unknown charset or transfer encoding leaves the body as it was written.
func lenient(err error) bool {
	return message.IsUnknownCharset(err) || message.IsUnknownEncoding(err)
}

// bodies collects the parts the rules may look at.
type bodies struct {
	status          strings.Builder
	hasStatus       bool
	html, text      strings.Builder
	seenHTML, seenT bool
}

func (b *bodies) walk(e *message.Entity, depth int, parts *int) error {
	*parts++
	if depth > maxPartDepth || *parts > maxParts {
		return fmt.Errorf("%w: nested too deeply or too many parts", errMalformed)
	}
	if mr := e.MultipartReader(); mr != nil {
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if p == nil || (err != nil && !lenient(err)) {
				return fmt.Errorf("%w: %v", errMalformed, err)
			}
			if err := b.walk(p, depth+1, parts); err != nil {
				return err
			}
		}
	}
	ct, _, err := e.Header.ContentType()
	if err != nil || ct == "" {
		ct = "text/plain"
	}
	if disp, _, _ := e.Header.ContentDisposition(); disp == "attachment" && ct != "message/delivery-status" {
		return nil
	}
	var dst *strings.Builder
	switch ct {
	case "message/delivery-status", "message/global-delivery-status":
		if b.hasStatus {
			return nil // the first one, as the original takes
		}
		b.hasStatus, dst = true, &b.status
	case "text/html":
		if b.seenHTML {
			b.html.WriteByte('\n')
		}
		b.seenHTML, dst = true, &b.html
	case "text/plain":
		if b.seenT {
			b.text.WriteByte('\n')
		}
		b.seenT, dst = true, &b.text
	default:
		// message/rfc822 (the bounced mail itself), images, …: its text
		// would only mislead the rules.
		return nil
	}
	if _, err := io.Copy(dst, e.Body); err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	return nil
}

// rules are email.bounce's filters.
type rules struct {
	subject         *regexp.Regexp // nil: any subject
	status          *regexp.Regexp
	failedRecipient *regexp.Regexp // nil: not checked
}

// compileRules compiles the filters; an error names the key.
func compileRules(subject, status, failedRecipient string) (rules, error) {
	var r rules
	var err error
	compile := func(key, expr string) *regexp.Regexp {
		re, cerr := regexp.Compile(expr)
		if cerr != nil && err == nil {
			err = fmt.Errorf("email.bounce.%s: %v (Go regular expressions have no lookaround or back-references)", key, cerr)
		}
		return re
	}
	if subject != "" {
		r.subject = compile("subjectRegex", subject)
	}
	// An empty status pattern matches every body, as new RegExp('') does.
	r.status = compile("smtpStatusCodeRegex", status)
	if failedRecipient != "" {
		r.failedRecipient = compile("failedRecipientRegex", failedRecipient)
	}
	return r, err
}

// hardBounce reports whether a bounce of the subscription to address
// counts towards unsubscribing it.
func (r rules) hardBounce(rep report, address string) bool {
	if r.subject != nil && !r.subject.MatchString(rep.subject) {
		return false
	}
	if !r.status.MatchString(rep.body) {
		return false
	}
	failed := rep.failedRecipients
	if len(failed) == 0 && r.failedRecipient != nil {
		if m := r.failedRecipient.FindString(rep.body); m != "" {
			failed = []string{m}
		}
	}
	if len(failed) == 0 {
		return true // no recipient found: nothing to check against
	}
	for _, f := range failed {
		if strings.EqualFold(f, address) {
			return true
		}
	}
	return false
}
