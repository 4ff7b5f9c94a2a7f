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
// A broadcast runs as a pipeline, one stage per concern:
//
//	candidates → chunks → send → record results → finish
//
// The stages:
//
//   - candidates: the ids of the confirmed subscriptions of the service and
//     channel, recorded once in the dispatch side collection
//     (mongostore's side collections) as the broadcast starts; a
//     re-dispatched broadcast keeps the candidates it has. Results an older
//     document holds inline (written by the original, or given by the
//     client in dispatch.successful/failed/skipped) are recorded first, so
//     those subscribers are never sent to again.
//   - chunks: pages of candidates without an outcome, in subscription id
//     order, with their subscriptions read in one query per page (a page is
//     broadcastSubscriberChunkSize candidates, at least 10,000 in-process).
//   - send: a bounded pool of workers evaluates the filters (the
//     subscription's broadcastPushNotificationFilter against the
//     notification's data, the notification's
//     broadcastPushNotificationSubscriptionFilter against the subscription's
//     data, with the config's custom functions), merges the message with the
//     subscriber's data and unsubscription links, and sends it.
//   - record: one writer per notification stores the outcomes in batches
//     with set semantics (the first final outcome of a subscriber wins, a
//     retried batch never duplicates one): successful, failed
//     ({subscriptionId, userChannelId, error}) or skipped. As in the original,
//     successes are recorded when guaranteedBroadcastPushDispatchProcessing
//     or bounce handling is on, and skipped subscribers when guaranteed
//     processing and logSkippedBroadcastPushDispatches are both on.
//   - finish: the state becomes sent (partial failures included), and
//     when asyncBroadcastPushNotification is a URL the final notification
//     is POSTed to it as JSON. The bounce records of the addresses reached
//     are stamped by the writer, batch by batch, as after a unicast.
//
// A synchronous broadcast answers when the pipeline is done; an asynchronous
// one (asyncBroadcastPushNotification true or a URL) answers at once. Here the
// pipeline runs in-process with bounded concurrency (Options.Concurrency) and
// no throttle; RunBroadcast is the whole unit of work of one broadcast, so the
// queue-based version can schedule it (or its chunks) behind the same API.
//
// Where we differ from the original, on purpose:
//
//   - userChannelId is compared as a whole, ignoring case; the original
//     builds an unanchored regular expression, so "a@b.c" also matched
//     "xa@b.com".
//   - A subscription that is no longer confirmed when its chunk is sent
//     (unsubscribed during the broadcast) is not sent to; the original loads
//     chunk members by id only. It is recorded as skipped under the same rule
//     as a filter mismatch.
//   - When the pipeline itself fails (the store cannot be read or written
//     after retries), the notification ends in state error, with the results
//     recorded so far kept; a later re-dispatch resumes with the rest.
//   - Results live outside the notification document, so a broadcast has no
//     size cap and each result is not a rewrite of the whole document.
//   - A dispatch failure's error is a document {message, status?, code?,
//     responseCode?}: the sender's words, never a URL or a credential.
package dispatch
