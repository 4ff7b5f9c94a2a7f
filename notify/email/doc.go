// Package email sends the notification service's outbound mail over SMTP.
//
// A [Sender] is built from the original service's `email.smtp` settings
// (nodemailer SMTP transport options, parsed by [ParseSMTP]) and sends one
// [Message] at a time; it is safe for concurrent use and keeps a bounded pool
// of SMTP connections that are reused across sends (nodemailer's `pool`,
// `maxConnections` and `maxMessages`).
//
// What a push notification adds to a mail is decided here, from [Addressing]
// (the service's email.inboundSmtpServer.domain, email.bounce.enabled and
// email.listUnsubscribeByEmail.enabled) and the message's [Push] data:
//
//   - List-Id: <{httpHost}/{service name}> — see [ListID];
//   - List-Unsubscribe: <mailto:un-{subscription id}-{unsubscription code}@{domain}>, <{unsubscription url}>
//     (the mailto part only when list-unsubscribe by email is on and a domain is set);
//   - List-Unsubscribe-Post: List-Unsubscribe=One-Click when the URL is http(s) (RFC 8058);
//   - the envelope sender (MAIL FROM) bn-{subscription id}-{unsubscription code}@{domain}
//     when bounce handling is on and a domain is set, so bounces come back to
//     the inbound SMTP server; the From header stays the message's From.
//
// Subscription confirmations and acknowledgements carry no [Push] and get
// none of these, as in the original.
//
// When the SMTP host name resolves to several addresses, a connection that
// cannot be opened to one address is tried at the next (the original retries
// each address of a multi-address host on connection errors).
//
// Errors are [*SendError]s: [IsPermanent] tells a 5xx rejection (retrying
// will not help) from a transient failure (4xx, connection trouble).
//
// With no SMTP host configured, `govkit notify serve` uses the public test
// mail service the original uses (Ethereal): [NewTestMail] creates the sender
// without any network traffic, and the account is fetched at the first send,
// with a short timeout and an error wrapping [ErrTestMailUnavailable] when
// the service cannot be reached.
package email
