package dispatch_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/mongostore"
)

// BenchmarkBroadcast sends one synchronous email broadcast per iteration to
// 10,000 confirmed subscribers on the embedded store (FerretDB on SQLite),
// through the pooled SMTP sender to a go-smtp sink on loopback, with every
// result recorded (guaranteed processing and bounce handling on, as by
// default). It reports emails/s and the peak heap in use during the run.
//
//	go test -run '^$' -bench BenchmarkBroadcast -benchtime 3x ./notify/dispatch/
func BenchmarkBroadcast(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) { benchBroadcast(b, n) })
	}
}

func benchBroadcast(b *testing.B, subscribers int) {
	store := openStore(b)
	sk := startCountingSink(b)
	host, port := splitHostPort(b, sk.addr)
	es, err := email.New(email.SMTPConfig{Host: host, Port: port, MaxConnections: 5, MaxMessages: -1}, addressing, email.WithLogger(quietLog()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = es.Close() })
	d, err := dispatch.New(dispatch.Options{
		Settings: dispatch.Settings{RestAPIRoot: "/api", ChunkSize: 1000, Guaranteed: true, Bounce: true},
		Store:    dispatch.FromMongo(store),
		Email:    es,
		Logger:   quietLog(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close(context.Background()) })
	insertSubscribers(b, store, "bench", subscribers)

	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	ctx := context.Background()
	b.ResetTimer()
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
		if got.State != notify.StateSent || len(got.Dispatch.Successful) != subscribers {
			b.Fatalf("state %q, %d successful", got.State, len(got.Dispatch.Successful))
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	close(stop)
	wg.Wait()
	if got := sk.count.Load(); got != int64(b.N*subscribers) {
		b.Fatalf("sink received %d, want %d", got, b.N*subscribers)
	}
	b.ReportMetric(float64(b.N*subscribers)/elapsed.Seconds(), "emails/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
}

// insertSubscribers writes confirmed subscriptions straight through the
// driver, many per round trip, as an existing deployment's data would be.
func insertSubscribers(b *testing.B, store *mongostore.Store, service string, count int) {
	b.Helper()
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(storeURI))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = client.Disconnect(ctx) }()
	coll := client.Database(store.Database()).Collection(notify.CollSubscription)
	now := time.Now()
	docs := make([]any, 0, 1000)
	for i := range count {
		docs = append(docs, bson.D{
			{Key: "serviceName", Value: service},
			{Key: "channel", Value: "email"},
			{Key: "userChannelId", Value: fmt.Sprintf("user%06d@example.org", i)},
			{Key: "state", Value: "confirmed"},
			{Key: "unsubscriptionCode", Value: fmt.Sprintf("%05d", i%100000)},
			{Key: "data", Value: bson.D{{Key: "name", Value: fmt.Sprintf("User %d", i)}}},
			{Key: "created", Value: now},
			{Key: "updated", Value: now},
		})
		if len(docs) == cap(docs) || i == count-1 {
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				b.Fatal(err)
			}
			docs = docs[:0]
		}
	}
}
