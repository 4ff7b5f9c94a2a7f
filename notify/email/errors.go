package email

import (
	"errors"
	"fmt"
	"net/textproto"
	"regexp"

	mail "github.com/wneessen/go-mail"
)

// Stages of a send, as reported in SendError.Stage.
const (
	StageMessage  = "message"           // the message itself is unusable (bad address)
	StageTestMail = "test mail account" // fetching the public test-mail account
	StageConnect  = "connect"           // TCP, TLS, greeting, EHLO, AUTH
	StageSend     = "send"              // MAIL FROM, RCPT TO, DATA
)

var (
	// ErrClosed is returned by Send after Close.
	ErrClosed = errors.New("email: sender is closed")
	// ErrInvalidMessage is wrapped by errors about the message itself.
	ErrInvalidMessage = errors.New("invalid message")
	// ErrTestMailUnavailable is wrapped when no SMTP host is configured and
	// the public test-mail service cannot be reached.
	ErrTestMailUnavailable = errors.New("no email.smtp.host is configured and the public test-mail service (ethereal.email) could not be reached; set email.smtp in the config")
)

// SendError is what Sender.Send returns on failure.
type SendError struct {
	Stage string
	// Code is the SMTP reply code, 0 when the failure was not a reply.
	Code int
	// EnhancedCode is the RFC 3463 status (e.g. "5.1.1") when the server gave one.
	EnhancedCode string
	// Permanent is true for a 5xx reply or an unusable message: sending the
	// same message again will fail again. Everything else (4xx, refused or
	// broken connections, timeouts) is transient.
	Permanent bool
	Err       error
}

func (e *SendError) Error() string {
	kind := "transient"
	if e.Permanent {
		kind = "permanent"
	}
	return fmt.Sprintf("email: %s failed (%s): %v", e.Stage, kind, e.Err)
}

func (e *SendError) Unwrap() error { return e.Err }

// IsPermanent reports whether err is a SendError that retrying cannot fix.
func IsPermanent(err error) bool {
	var se *SendError
	return errors.As(err, &se) && se.Permanent
}

var enhancedCodeRe = regexp.MustCompile(`\b[245]\.\d{1,3}\.\d{1,3}\b`)

// classify turns an error from dialing or sending into a SendError.
func classify(stage string, err error) *SendError {
	var se *SendError
	if errors.As(err, &se) {
		return se
	}
	out := &SendError{Stage: stage, Err: err}
	var tp *textproto.Error
	var ms *mail.SendError
	switch {
	case errors.As(err, &tp):
		out.Code = tp.Code
		out.EnhancedCode = enhancedCodeRe.FindString(tp.Msg)
	case errors.As(err, &ms):
		out.Code = ms.ErrorCode()
		out.EnhancedCode = ms.EnhancedStatusCode()
		if out.EnhancedCode == "" {
			out.EnhancedCode = enhancedCodeRe.FindString(ms.Error())
		}
		switch {
		case errors.Is(err, mail.ErrNoFromAddress), errors.Is(err, mail.ErrNoRcptAddresses):
			out.Permanent = true
		case ms.Reason == mail.ErrGetSender || ms.Reason == mail.ErrGetRcpts || ms.Reason == mail.ErrNoUnencoded:
			out.Permanent = true
		}
	}
	if out.Code >= 500 && out.Code < 600 {
		out.Permanent = true
	}
	return out
}

// isReply reports whether err carries an SMTP reply, i.e. the connection
// itself still works.
func isReply(err error) bool {
	var tp *textproto.Error
	if errors.As(err, &tp) {
		return true
	}
	var ms *mail.SendError
	return errors.As(err, &ms) && ms.ErrorCode() != 0
}
