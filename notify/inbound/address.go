package inbound

import (
	"strings"

	"github.com/emersion/go-smtp"
)

// The kinds of address the server accepts.
const (
	kindUnsubscribe = "un"
	kindBounce      = "bn"
)

// maxCodeLength bounds the unsubscription code in an address. Codes are
// generated from a regex (five digits by default); this leaves room for
// long custom ones while keeping addresses of a sane length.
const maxCodeLength = 100

// recipient is an accepted address: un-{id}-{code}@{domain} or
// bn-{id}-{code}@{domain}.
type recipient struct {
	kind   string // kindUnsubscribe or kindBounce
	id     string // the subscription id: 24 lower-case hex digits
	code   string // the unsubscription code (may be empty)
	domain string
}

// String is the address with its code redacted, for logs.
func (r recipient) String() string {
	return r.kind + "-" + r.id + "-…@" + r.domain
}

var (
	errNoMailbox = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such mailbox"}
	errNoRelay   = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Relaying denied"}
)

// parseRecipient accepts exactly un-{id}-{code}@{domain} and
// bn-{id}-{code}@{domain} with domain one of domains (ignoring case), id an
// ObjectId in hex and code made of the characters an unquoted local part
// may hold. Anything else is an SMTP error for RCPT.
//
// The original matched /(un|bn)-(.+?)-(.*)@(.+)/ anywhere in the address;
// here the whole address must have the form, so that only what the
// service itself hands out is accepted, and the id and code that reach the
// store are plain values of a known shape.
func parseRecipient(addr string, domains []string) (recipient, error) {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return recipient{}, errNoMailbox
	}
	local, domain := addr[:at], strings.ToLower(addr[at+1:])
	known := false
	for _, d := range domains {
		known = known || strings.EqualFold(d, domain)
	}
	if !known {
		return recipient{}, errNoRelay
	}
	kind, rest, ok := strings.Cut(local, "-")
	kind = strings.ToLower(kind)
	if !ok || (kind != kindUnsubscribe && kind != kindBounce) {
		return recipient{}, errNoMailbox
	}
	id, code, ok := strings.Cut(rest, "-")
	if !ok || len(id) != 24 || !isHex(id) || len(code) > maxCodeLength || !isAtext(code) {
		return recipient{}, errNoMailbox
	}
	return recipient{kind: kind, id: strings.ToLower(id), code: code, domain: domain}, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// isAtext reports whether s holds only the characters of an unquoted
// local part (RFC 5322 atext and dots).
func isAtext(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-/=?^_`{|}~.", c) >= 0:
		default:
			return false
		}
	}
	return true
}
