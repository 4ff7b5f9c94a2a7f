// Package inbound is the notification service's inbound SMTP server: the
// mailbox that list-unsubscribe mail and bounces come back to
// (email.inboundSmtpServer), as in the original. It runs on every node.
//
// Push notification mail carries two addresses at the inbound domain
// (see notify/email): List-Unsubscribe offers
// un-{subscription id}-{unsubscription code}@{domain}, and the envelope
// sender is bn-{subscription id}-{unsubscription code}@{domain}, where
// receiving servers send their bounces. Nothing else is accepted: a
// recipient of another form, or at a domain that is not one of the
// comma-separated email.inboundSmtpServer.domain, is refused at RCPT with
// 550, so the server never relays and offers no mailbox to anyone. AUTH is
// not offered.
//
// # List-unsubscribe
//
// Mail to un-{id}-{code} unsubscribes the subscription exactly as the
// API's anonymous unsubscribe does (notify/subscription's Unsubscribe,
// called in-process rather than over the API as the original does:
// the code must match, the envelope sender must be the subscription's
// address, ignoring case, and the subscription must be confirmed; the
// acknowledgement message with its undo link is sent). A refusal is
// answered 550 and an unknown subscription 550 too; trouble with the store
// 451, so that the sender retries. A null envelope sender (MAIL FROM:<>) is
// refused at RCPT: it cannot be the subscriber's address. When
// email.listUnsubscribeByEmail.enabled is false, un- recipients are refused.
//
// # Bounces
//
// Mail to bn-{id}-{code} is a bounce when email.bounce.enabled (otherwise it
// is accepted and dropped, as in the original). It counts against a
// confirmed email subscription with that id and code (any other: accepted
// silently) when
//
//   - its subject matches email.bounce.subjectRegex, unless that is empty;
//   - its body matches email.bounce.smtpStatusCodeRegex, the body being the
//     message/delivery-status part when there is one, else the HTML, else
//     the text;
//   - the failed recipient equals the subscription's address, ignoring case,
//     when one is found: the X-Failed-Recipients header (any address in
//     it), else the first match of email.bounce.failedRecipientRegex in the
//     body.
//
// Every bounce of a subscription is recorded in the active bounce record of
// its address (collection bounce; created when there is none): the message
// is put first in bounceMessages and, when it counts, hardBounceCount goes
// up by one. When hardBounceCount becomes greater than
// email.bounce.unsubThreshold, the address is unsubscribed from all its
// services (the API's unsubscribe with additionalServices=_all, so the
// acknowledgement is sent and undo restores them) and the record is marked
// deleted. The rules are regular expressions in the original's JavaScript
// syntax, run by Go's regexp (RE2: no lookaround, no back-references); one
// that does not compile stops the service at start, naming the key.
//
// A bounce that cannot be parsed as a MIME message is answered 451 and
// nothing is written.
//
// # Wrong codes
//
// The code of every un- and bn- recipient is checked at RCPT by
// notify/subscription's CheckCode, against the budgets of wrong codes the
// API's verify, unsubscribe and undo routes spend (AttemptLimits: per client
// address and per subscription, in Redis when the queue is, so every node
// counts into the same budgets). A wrong un- code is answered 550; a wrong
// bn- code is accepted and dropped, as in the original, but counted; once
// a budget is spent the recipient is answered 450 4.7.1 before its code is
// compared, so that five-digit codes cannot be walked by mail any faster
// than over HTTP. The unsubscription a passed threshold makes
// (UnsubscribeBounced) neither checks nor charges a budget: every bounce
// it counted had its code checked.
//
// Bounce records are updated by read-modify-write under a lock taken in the
// store (mongostore's Lock) per address, so that two bounces at once, at
// one node or at two, never lose a count: FerretDB v1, the embedded store,
// applies $inc and $push by rewriting the whole document and loses
// concurrent updates. bounceMessages keeps the newest messages within
// MaxStoredBounceBytes, so that a flood of bounces cannot grow a record
// past the 16 MB a document may hold.
//
// # Limits
//
// Anyone on the internet can connect, so the server bounds what a client
// can take: MaxMessageBytes per message (advertised as SIZE, enforced on
// DATA and BDAT), MaxRecipients per message, MaxLineLength per line,
// MaxCommands MAIL and RCPT commands without a message, DefaultMaxClients
// connections at once (options.maxClients), DefaultMaxClientsPerAddress of
// them per client address, an IPv6 one by its /64
// (options.maxClientsPerAddress), DefaultSocketTimeout of silence
// (options.socketTimeout), DefaultIdleTimeout without a MAIL, RCPT or DATA
// (options.idleTimeout: NOOP and the like answer but do not keep a
// connection) and DefaultMaxSessionTime per connection
// (options.maxSessionTime). A connection over a limit is answered 421 and
// closed. Nothing from the mail is logged but the
// kind of address, the subscription id, the client's address and the
// outcome: never a code, a subscriber's address or content.
//
// # Options
//
// email.inboundSmtpServer.options are the original's smtp-server options,
// as far as they mean something here: secure (implicit TLS), key and cert
// (PEM), name (the host name in the greeting), maxClients, socketTimeout
// (milliseconds), disabledCommands (STARTTLS; AUTH is never offered) and
// hideSTARTTLS; and three of ours, maxClientsPerAddress, idleTimeout and
// maxSessionTime (milliseconds). The certificate is the options' key and cert, else the
// deployment's server/certs. With one, STARTTLS is offered (unless
// disabled); without one, it is not, since clients that verify
// certificates (Go's net/smtp does) would fail on a certificate the server
// made itself, and secure then serves one made at start and signed by
// itself, as smtp-server ships one. Other options are reported at start
// and ignored; size is fixed at MaxMessageBytes, as in the original.
package inbound
