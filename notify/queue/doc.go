// Package queue is the notification service's queue backend: Redis, named
// by the config key queue.connection, or — when that is null — an
// in-process Redis (miniredis) listening on a loopback port, so that one
// node runs alone through exactly the same client code. On it are built
// the two things every node of a cluster shares:
//
//   - a reliable job queue ([Queue], [Workers]) that broadcast chunks run
//     through: at-least-once delivery with leases, heartbeats, a reaper
//     that hands a dead node's jobs to the others, retries with backoff,
//     and deduplication of job ids;
//   - a cluster-wide throttle with priorities ([Throttle]): no window of
//     duration, wherever it starts, holds more than max grants across all
//     nodes, and a waiting higher-priority send is granted before lower
//     ones.
//
// Every key lives under one prefix (default "govkit:notify:", or the
// connection's keyPrefix), so a Redis can be shared and a test can own a
// namespace of its own. Times are Redis's (TIME inside the scripts), never
// the nodes' clocks, so clock skew between nodes does not matter. Every
// state change is one Lua script, so it is atomic on Redis and on
// miniredis alike; Redis 5 or later is needed (effects replication of
// scripts).
//
// # Jobs
//
// A job is a string id (its payload lives elsewhere: notify/dispatch keeps
// it in the document store). The keys:
//
//	{prefix}q:jobs      hash  id → times claimed; a job is known from
//	                          Enqueue until it is acknowledged, so enqueueing
//	                          a known id again does nothing
//	{prefix}q:pending   list  ids ready to run, oldest first; a job taken
//	                          back from a dead node, or enqueued with
//	                          EnqueueFront, goes to the front
//	{prefix}q:leases    zset  id → lease expiry (ms), for claimed jobs
//	{prefix}q:owners    hash  id → the claiming worker's token
//	{prefix}q:delayed   zset  id → when a failed job may run again
//	{prefix}q:wake      list  wake-up tokens for idle workers (BLPOP)
//
// A worker claims a job (its attempt count goes up), extends its lease
// every third of the lease while it runs, and acknowledges it when the
// handler returns nil; an error puts it back after a backoff. A lease
// that is not extended (the node died, or lost Redis for longer than the
// lease) is taken back by the reaper every node runs, and the job goes to
// the front of the line: a dead node's work is picked up within about a
// lease (30 s by default) plus the reaper's period (5 s). A worker that
// finds its lease gone stops its job (its context is cancelled). On
// shutdown, jobs still running when the grace period ends are released to
// the others without counting an attempt.
//
// At-least-once means a handler may run again after a crash: handlers
// must be idempotent (notify/dispatch records each subscriber's outcome
// with set semantics and marks sends in flight, see there).
//
// # Throttle
//
// A GCRA-like spacing limiter with zero burst: grants are at least
// ceil(duration/max) apart (v5's minTime), which is what keeps every
// sliding window of duration at max grants or fewer. Waiters queue in a
// sorted set ordered by priority, then arrival; only the head of the line
// may take the next slot. Each waiter's ticket expires a few seconds after
// its last poll, so a waiter whose node died leaves the line by itself.
// No Redis call is made when a throttle is disabled (there is no
// [Throttle] then).
//
// # Why not asynq
//
// DESIGN.md pinned asynq. It runs on miniredis, but its lease (30 s) and
// recoverer period (1 min, plus a 30 s allowance) are constants, so a dead
// node's chunk waits up to two minutes; its registry keys (asynq:servers,
// asynq:workers, asynq:queues) cannot be prefixed, so tests and tenants
// sharing a Redis see each other; and the throttle needs a script of its
// own anyway. The few scripts here do what the broadcast needs and no more.
package queue
