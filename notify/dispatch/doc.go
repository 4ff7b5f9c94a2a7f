// Package dispatch sends the notification service's push notifications: it
// decides who gets a notification, merges the message for each subscriber,
// hands it to the email or SMS sender, and records what happened.
//
// # Before a notification is written
//
// Check validates a notification as the original does before it creates or
// replaces one: a unicast push (email or sms, not a broadcast) must match a
// confirmed subscription of its service and channel — by userChannelId,
// compared case-insensitively, and/or userId — unless
// skipSubscriptionConfirmationCheck is set, in which case it needs a
// userChannelId; otherwise ErrInvalidUser (403 "invalid user"). The matched
// subscription fills in userChannelId when only userId was given, and is
// what the message is merged with. A broadcastPushNotificationSubscriptionFilter
// that does not compile is a *jmesfilter.SyntaxError (400).
//
// # Unicast
//
// Dispatch sends a unicast push at once, unless invalidBefore is still in the
// future: then nothing is sent and the notification stays new (the
// dispatchLiveNotifications cron job sends it when it becomes valid). The
// notification ends in state sent, or error when the sender failed. Email gets
// List-Id, List-Unsubscribe and the VERP bounce sender from notify/email when
// a subscription is known; with skipSubscriptionConfirmationCheck and no
// subscription there is none to unsubscribe from, so those are left out.
// In-app notifications are only stored.
//
// # Broadcast
//
// A broadcast runs through the queue of notify/queue, so that every node
// that runs workers shares the work and a node that dies loses none of it.
// Dispatch records the broadcast's header (or finds it: a notification
// dispatched again resumes its run), sets state sending and queues three
// kinds of job, all keyed by notification and run:
//
//	plan → chunk 0 … chunk n-1 → finish
//
// The jobs:
//
//   - plan: one streaming pass over the confirmed subscriptions of the
//     service and channel (never held in memory together) writes chunks of
//     broadcastSubscriberChunkSize subscribers (at most MaxChunkSize): a
//     snapshot of what sending needs and a result document listing the
//     candidates (notify/mongostore). A notification the original left
//     half-sent keeps its inline candidates, and the subscribers it
//     recorded are not sent to again. Then every chunk not yet done is
//     queued. Run again on a planned broadcast, it only queues what is
//     missing: that is how a stale broadcast resumes.
//   - chunk: a worker reads the chunk's snapshot and results (by _id; no
//     query ever scans the subscriptions or the results again), and sends
//     to each subscriber without an outcome through a pool of
//     Options.Concurrency: both JMESPath filters (the subscription's
//     broadcastPushNotificationFilter against the notification's data,
//     the notification's broadcastPushNotificationSubscriptionFilter
//     against the subscription's data, with the config's custom
//     functions), the mail merge with the subscriber's data and
//     unsubscription links, the send. Outcomes are written in batches
//     with set semantics: successful, failed ({subscriptionId,
//     userChannelId, error}) or skipped. As in the original, successes are
//     recorded when guaranteedBroadcastPushDispatchProcessing or bounce
//     handling is on, and skipped subscribers when guaranteed processing
//     and logSkippedBroadcastPushDispatches are both on. The bounce
//     records of the addresses reached are stamped batch by batch, as
//     after a unicast. The last chunk to finish queues the finish step.
//   - finish: state sent (partial failures included, unless the state
//     became error meanwhile), the chunks' snapshots dropped, and when
//     asyncBroadcastPushNotification is a URL the final notification
//     POSTed to it as JSON; then the requests waiting for it are woken.
//
// A synchronous broadcast answers when the finish step has run, on
// whichever node; an asynchronous one (asyncBroadcastPushNotification true
// or a URL) answers at once. Dispatch of a broadcast that has a run
// resumes it (how notify/cron re-dispatches a stale one); Redispatch does
// the same for a stored notification by id, never waiting (how a single
// node takes up at start what its embedded queue lost).
//
// # Guaranteed processing
//
// With guaranteedBroadcastPushDispatchProcessing (the default), a chunk's
// job is leased to its worker and taken back by the queue when the lease
// is not renewed (the node died): another node resumes it within about a
// lease (30 s), not after the 10-minute stale-broadcast cron job. Before
// each send the subscriber is marked in the queue backend, and the
// outcome is kept with the mark until the chunk's results are stored. A
// resumed chunk records the outcomes kept with marks, and sends to every
// subscriber without a recorded or kept outcome — including those marked
// without one (a mark in doubt: the send began, its end is unknown), as
// the original re-sends an interrupted chunk. So every candidate ends
// with exactly one outcome, every subscriber is sent to at least once,
// and twice only when the server accepted a message whose acceptance
// never reached us (the node died, or the queue backend lost the
// outcome, between the server's answer and its record).
//
// A chunk that keeps failing (the store cannot return it) is tried
// Options.MaxAttempts times with growing waits, then its subscribers
// without an outcome are recorded as failed. Without guaranteed
// processing a failed chunk is not tried again: its subscribers without
// an outcome are recorded as failed, as the original records a failed
// chunk's whole slice.
//
// # A chunk's life
//
// One attempt at a chunk job is a small state machine (chunk.go, run):
//
//	load ──▶ resolve ──▶ send ──▶ flush ──▶ complete ──▶ end
//	 │          │                  ▲ │          ▲         ▲
//	 │          └─ nothing to send─┤ └─ failed ─┼─────────┤
//	 ├─ attempts spent ─▶ give up──┘            │         │
//	 ├─ complete already ───────────────────────┘         │
//	 └─ failed ───────────────────────────────────────────┘
//
// The steps:
//
//   - load: the chunk's results stored so far (the store) and its marks
//     (the queue backend). Reads are retried: the store's five times, the
//     queue backend's for up to a lease.
//   - resolve: the snapshot's subscribers, sorted: recorded already
//     (left alone); an outcome kept with a mark (recorded as it ended);
//     the rest, marked in doubt or never marked, to be sent.
//   - give up: after Options.MaxAttempts, the candidates without an
//     outcome are recorded as failed, not sent.
//   - send: a pool sends to the subscribers left. Each goes waiting (for
//     the throttle, a connection) → marked → sending → outcome known →
//     kept with its mark → stored in a batch. A mark or outcome that cannot
//     be written is tried again with growing waits for up to a lease (a
//     Redis restart or failover); a write whose reply was lost is written
//     again, harmlessly. When the pipeline fails (a write still failing
//     after that, results the store refuses) or the attempt's context ends
//     (the lease lost, a shutdown), no new send begins: sends still waiting
//     are stopped and leave no outcome (cut short is not the subscriber's
//     failure), and sends past their mark finish and are recorded.
//   - flush: the outcomes still in memory are stored, under a context
//     that outlives the attempt's, before the attempt ends — failed or not.
//     What the store cannot take is still kept with the marks.
//   - complete: the chunk's results are folded into one document (a
//     subscriber's first outcome kept, should a batch have been stored
//     twice), marked complete, the marks dropped, the chunk recorded done;
//     the last chunk done queues the finish step.
//   - end: the attempt's error, if any, makes the queue run the job again
//     after a backoff; a job whose end cannot be recorded (the queue
//     backend is away) is taken back when its lease expires.
//
// The plan and finish steps write to the queue backend the same way
// (retried for up to a lease) and are safe to run twice. So the failed
// list (dispatch.failed) holds only subscribers whose mail or text the
// provider refused, or whose filter or merge failed, or — after
// Options.MaxAttempts — whose chunk could not be read.
//
// Where we differ from the original, on purpose:
//
//   - userChannelId is compared as a whole, ignoring case; the original
//     builds an unanchored regular expression, so "a@b.c" also matched
//     "xa@b.com".
//   - The candidates' subscriptions are read once, when the broadcast is
//     planned, and sent as they were then (the original fixes the list of
//     candidate ids then, and reads each chunk's subscriptions when the
//     chunk runs): a change made during a long broadcast shows in the next.
//   - A chunk that cannot be read or written is retried with growing
//     waits, then its unsent subscribers are recorded as failed; a
//     broadcast that cannot even be planned ends in state error.
//   - Results live outside the notification document, so a broadcast has no
//     size cap and each result is not a rewrite of the whole document; the
//     API shows each dispatch list up to a bound (notify/mongostore) and
//     dispatch.counts with the full counts.
//   - A dispatch failure's error is a document {message, status?, code?,
//     responseCode?}: the sender's words, never a URL or a credential.
package dispatch
