// Package cron runs the notification service's scheduled jobs, with the
// original's names, time specs (config key cron.<job>.timeSpec, read by
// package timespec) and settings:
//
//   - purgeData (default "0 0 1 * * *"): deletes old push notifications
//     and the broadcast results kept beside them, expired and deleted
//     in-app notifications, old non-confirmed subscriptions, old deleted
//     bounce records and long-expired access tokens (Service.PurgeData).
//   - dispatchLiveNotifications ("0 * * * * *"): sends the email and sms
//     notifications held until their invalidBefore.
//   - checkRssConfigUpdates ("0 * * * * *"): keeps one schedule per
//     notification configuration with an RSS feed (value.rss.timeSpec);
//     each poll turns new and updated feed items into asynchronous
//     broadcasts (Service.PollFeed).
//   - deleteBounces ("0 0 * * * *"): retires the bounce records of
//     addresses whose latest notification did not bounce.
//   - reDispatchBroadcastPushNotifications ("0 */2 * * * *"): resumes
//     broadcasts whose node stopped (no progress for ten minutes).
//
// # Where and how often
//
// Cron runs on a single node or on the primary, never on a secondary,
// and not under NODE_ENV=test, as in the original; the caller decides
// (config.NodeRole.RunsCron). When two nodes run it at once — two
// primaries during a rolling update — each scheduled run of a job takes a
// short lock named after the job and the time it was scheduled for
// (Locker: in Redis for a cluster, in memory for one node), so it happens
// once. Beyond the lock every job is safe to repeat: notifications are
// claimed by a conditional update before they are sent (new → sending;
// a stalled sending broadcast by its unchanged updated time), bounce
// records are retired only if unchanged, and an RSS poll writes the feed's
// state on the condition that no other poll did so since it read it,
// before it sends anything. A job's runs never overlap in one process: a
// run longer than its interval skips the times it missed.
//
// Jobs run by a Clock: the system clock in service, a ManualClock in tests,
// which move it to the time they want instead of waiting for it.
//
// What cron sends goes through the same dispatch.Dispatcher as the API's
// requests (the original calls its own API over HTTP; here the calls are
// in-process), and its changes are recorded as made by User, the profile
// the original's self-calls from the loopback address get.
package cron
