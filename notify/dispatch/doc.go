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
// each send the subscriber is marked in the queue backend; a resumed chunk
// sends to every subscriber that has neither an outcome nor a mark, and
// records the marked ones without an outcome as failed, "delivery
// unknown": their mail may have gone, and sending it again could deliver
// it twice. So no recorded subscriber is ever sent to twice and every
// candidate ends with exactly one outcome. A chunk that keeps failing (the
// store cannot return it) is tried Options.MaxAttempts times with growing
// waits, then its subscribers without an outcome are recorded as failed.
// Without guaranteed processing a failed chunk is not tried again: its
// subscribers without an outcome are recorded as failed, as the original
// records a failed chunk's whole slice.
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
//   - After a node dies, subscribers whose send had begun are recorded as
//     failed with "delivery unknown" instead of being sent again (the
//     original sends them again, so they may get the mail twice).
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
