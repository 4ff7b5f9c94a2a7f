package eventcli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tailWriter counts lines and keeps only the last one, so the test's own
// buffers do not grow with the output it checks.
type tailWriter struct {
	lines int
	last  []byte
	cur   []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == '\n' {
			w.lines++
			w.last = append(w.last[:0], w.cur...)
			w.cur = w.cur[:0]
			continue
		}
		if len(w.cur) < 512 {
			w.cur = append(w.cur, c)
		}
	}
	return len(p), nil
}

// peakHeap samples HeapInuse while run runs and returns the largest value.
func peakHeap(run func()) uint64 {
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	run()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// feedLines writes n NDJSON records into w: datetime events with varying
// values, every 1000th of them invalid (a leap second).
func feedLines(w *io.PipeWriter, n int) {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		sec := strconv.Itoa(10 + i%50)
		if i%1000 == 999 {
			sec = "60"
		}
		fmt.Fprintf(&b, `{"start_datetime":"2024-12-01T%d:%02d:%s.%dZ","end_datetime":"2024-12-02T10:00:00Z"}`+"\n", i%24, i%60, sec, i%9999999)
		if b.Len() > 32<<10 {
			if _, err := w.Write(b.Bytes()); err != nil {
				return
			}
			b.Reset()
		}
	}
	w.Write(b.Bytes())
	w.Close()
}

const (
	million  = 1_000_000
	heapMax  = 64 << 20
	invalids = million / 1000
)

func TestValidateMillionLinesInConstantMemory(t *testing.T) {
	pr, pw := io.Pipe()
	go feedLines(pw, million)
	var out tailWriter
	var code int
	peak := peakHeap(func() {
		code = Validate(context.Background(), []string{"--order"}, Streams{pr, &out, io.Discard})
	})
	t.Logf("peak heap in use: %.1f MB", float64(peak)/(1<<20))
	if peak >= heapMax {
		t.Errorf("peak heap %d bytes, want under %d", peak, heapMax)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := fmt.Sprintf("1 file: %d records, %d valid, %d invalid (%d problems)", million, million-invalids, invalids, invalids)
	if string(out.last) != want || out.lines != invalids+1 {
		t.Errorf("%d lines, last %q; want %d problem lines and %q", out.lines, out.last, invalids, want)
	}
}

func TestToDateMillionLinesInConstantMemory(t *testing.T) {
	pr, pw := io.Pipe()
	go feedLines(pw, million)
	var out, errOut tailWriter
	var code int
	peak := peakHeap(func() {
		code = ToDate(context.Background(), nil, Streams{pr, &out, &errOut})
	})
	t.Logf("peak heap in use: %.1f MB", float64(peak)/(1<<20))
	if peak >= heapMax {
		t.Errorf("peak heap %d bytes, want under %d", peak, heapMax)
	}
	if code != 1 || out.lines != million-invalids || errOut.lines != invalids+1 {
		t.Errorf("exit %d, %d records written, %d stderr lines", code, out.lines, errOut.lines)
	}
	if want := `{"start_date":"2024-12-01","end_date":"2024-12-02"}`; string(out.last) != want {
		t.Errorf("last record %s, want %s", out.last, want)
	}
}
