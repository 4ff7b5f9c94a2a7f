package dispatch_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/mongostore"
)

// BenchmarkBroadcast sends one synchronous email broadcast per iteration,
// the whole way a single node on embedded defaults sends it: the embedded
// store (FerretDB on SQLite, in this process) and the embedded queue
// (miniredis on loopback), the plan, chunks of 1,000 worked on by the
// node's workers, filters and mail merge per subscriber
// ({subscription::name}, {unsubscription_url}), List-Id and
// List-Unsubscribe headers and the VERP sender, the pooled SMTP sender (the
// defaults: 5 connections, 100 messages each) to a go-smtp sink on
// loopback that reads every message, every outcome recorded (guaranteed
// processing and bounce handling on, the defaults, so sends are marked in
// the queue too), bounce records stamped, final state read back. No
// throttle. It reports emails/s and the peak heap in use and peak resident
// memory during the broadcasts (the sink and the store included).
//
// 10,000 subscribers by default; GOVKIT_LOAD=1 adds 100,000 and
// 1,000,000, or GOVKIT_LOAD_SUBSCRIBERS=a,b,… picks the sizes.
// GOVKIT_LOAD_CPUPROFILE=file profiles the broadcasts alone.
// Subscriptions are loaded with bulk inserts, as the API stores them.
//
//	go test -run '^$' -bench BenchmarkBroadcast -benchtime 1x ./notify/dispatch/
//	GOVKIT_LOAD=1 go test -run '^$' -bench BenchmarkBroadcast -benchtime 1x -timeout 2h ./notify/dispatch/
func BenchmarkBroadcast(b *testing.B) {
	sizes := []int{10000}
	if os.Getenv("GOVKIT_LOAD") == "1" {
		sizes = append(sizes, 100000, 1000000)
	}
	if s := os.Getenv("GOVKIT_LOAD_SUBSCRIBERS"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("GOVKIT_LOAD_SUBSCRIBERS: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) { benchBroadcast(b, n) })
	}
}

func benchBroadcast(b *testing.B, subscribers int) {
	store := openStore(b)
	sk := startCountingSink(b)
	host, port := splitHostPort(b, sk.addr)
	es, err := email.New(email.SMTPConfig{Host: host, Port: port, MaxConnections: 16}, addressing, email.WithLogger(quietLog()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = es.Close() })
	d, err := dispatch.New(dispatch.Options{
		Settings: dispatch.Settings{RestAPIRoot: "/api", ChunkSize: 1000, Guaranteed: true, Bounce: true},
		Store:    dispatch.FromMongo(store),
		Backend:  openQueue(b),
		Email:    es,
		Logger:   benchLog(),
	})
	if err != nil {
		b.Fatal(err)
	}
	d.StartWorkers()
	b.Cleanup(func() { _ = d.Close(context.Background()) })
	loadSubscribers(b, store, "bench", subscribers)

	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
		for {
			metrics.Read(sample)
			if inuse := sample[0].Value.Uint64() + sample[1].Value.Uint64(); inuse > peakHeap.Load() {
				peakHeap.Store(inuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	runtime.GC()
	resetPeakRSS()
	ctx := context.Background()
	if path := os.Getenv("GOVKIT_LOAD_CPUPROFILE"); path != "" {
		// the broadcasts only, not the loading of the subscriptions
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	b.ResetTimer()
	cpu0 := processCPU()
	start := time.Now()
	for range b.N {
		n := notify.Notification{ServiceName: "bench", Channel: "email", IsBroadcast: true,
			Message: emailMessage("Hello {subscription::name}, unsubscribe at {unsubscription_url}")}
		if err := store.Notifications().Insert(ctx, &n); err != nil {
			b.Fatal(err)
		}
		got, err := d.Dispatch(ctx, &n, nil, dispatch.Request{Host: "http://127.0.0.1:3000"})
		if err != nil {
			b.Fatal(err)
		}
		if c := got.Dispatch.Counts; got.State != notify.StateSent || c.Successful != int64(subscribers) {
			b.Fatalf("state %q, counts %+v", got.State, c)
		}
	}
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	b.StopTimer()
	close(stop)
	wg.Wait()
	if got := sk.count.Load(); got != int64(b.N*subscribers) {
		b.Fatalf("sink received %d, want %d", got, b.N*subscribers)
	}
	b.ReportMetric(float64(b.N*subscribers)/elapsed.Seconds(), "emails/s")
	// CPU time per email (this process: service, store, queue and sink)
	// is what the machine's load does not change much.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*subscribers), "cpu-µs/email")
	b.ReportMetric(float64(peakHeap.Load())/(1<<20), "peak-heap-MB")
	if rss := peakRSS(); rss > 0 {
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MB")
	}
}

// benchLog shows the dispatcher's log with GOVKIT_LOAD_LOG=1: when the
// plan was done, when chunks were resumed.
func benchLog() *slog.Logger {
	if os.Getenv("GOVKIT_LOAD_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return quietLog()
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the kernel's record of this process's peak resident
// memory (Linux), so peakRSS measures from here.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the peak resident memory since resetPeakRSS (VmHWM), 0 when
// unknown.
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// loadSubscribers bulk-inserts confirmed subscriptions shaped as the API
// stores them: a confirmation request with its templates, data, an
// unsubscription code.
func loadSubscribers(b *testing.B, store *mongostore.Store, service string, count int) {
	b.Helper()
	ctx := context.Background()
	const batch = 5000
	subs := make([]*notify.Subscription, 0, batch)
	for i := range count {
		subs = append(subs, &notify.Subscription{
			ServiceName: service, Channel: notify.ChannelEmail, State: notify.StateConfirmed,
			UserChannelID:      fmt.Sprintf("user%07d@example.org", i),
			UnsubscriptionCode: fmt.Sprintf("%05d", i%100000),
			ConfirmationRequest: notify.Fields{
				{Key: "confirmationCodeRegex", Value: `\d{5}`}, {Key: "sendRequest", Value: true},
				{Key: "from", Value: "no_reply@invalid.local"}, {Key: "subject", Value: "Subscription confirmation"},
				{Key: "textBody", Value: "Enter {subscription_confirmation_code} on screen"}, {Key: "confirmationCode", Value: "12345"},
			},
			Data: notify.Fields{{Key: "name", Value: fmt.Sprintf("User %d", i)}},
		})
		if len(subs) == batch || i == count-1 {
			if err := store.Subscriptions().InsertMany(ctx, subs); err != nil {
				b.Fatal(err)
			}
			subs = subs[:0]
		}
	}
}
