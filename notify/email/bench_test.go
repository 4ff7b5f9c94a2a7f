package email_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/govkit/govkit/notify/email"
)

// BenchmarkSend measures push mails per second through one pooled Sender
// to a go-smtp sink on loopback, with 1, 4 and 16 goroutines sending at
// once and as many pooled connections (other settings at their defaults:
// 100 messages per connection). The sink runs in the same process, so the
// figure covers both ends of the SMTP conversation.
func BenchmarkSend(b *testing.B) {
	for _, senders := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("senders=%d", senders), func(b *testing.B) {
			s := startSink(b, "127.0.0.1", func(s *sink) { s.discard = true })
			cfg := sinkConfig(b, s)
			cfg.MaxConnections = senders
			snd := newSender(b, cfg, email.Addressing{InboundDomain: "inbound.example.org", Bounce: true, ListUnsubscribeByEmail: true})
			m := pushMessage()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			for range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if err := snd.Send(context.Background(), m); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "emails/s")
			if got := s.received.Load(); got != int64(b.N) {
				b.Fatalf("sink received %d, want %d", got, b.N)
			}
		})
	}
}
