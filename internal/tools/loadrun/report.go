package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// report is a whole run: what was measured, under which load, and the
// figures. Its JSON form (-json) is for comparing runs.
type report struct {
	Commit      string    `json:"commit"`
	Started     time.Time `json:"started"`
	LoadStart   string    `json:"loadAverageAtStart"`
	LoadEnd     string    `json:"loadAverageAtEnd"`
	Connections int       `json:"connections"`
	Seconds     float64   `json:"seconds"`
	Warmup      float64   `json:"warmupSeconds"`
	Docs        int       `json:"seededDocuments"`
	Results     []result  `json:"results"`
}

// markdown prints the table for BENCHMARKS.md and the run's conditions.
func (rep report) markdown(w io.Writer) {
	fmt.Fprintf(w, "\nloadrun at %s, %s, %d CPUs; %d connections, %v measured after %v warm-up per scenario; load average %s at start, %s at end\n\n",
		rep.Commit, runtime.Version(), runtime.NumCPU(), rep.Connections,
		time.Duration(rep.Seconds*float64(time.Second)), time.Duration(rep.Warmup*float64(time.Second)), rep.LoadStart, rep.LoadEnd)
	fmt.Fprintf(w, "platform: `govkit docplatform serve`, NODE_ENV=development, THROTTLE_{GLOBAL,AUTH,AUTH_REFRESH}_LIMIT=%s, request log on (JSON lines to a file); %d documents seeded in the group\n\n", relaxedLimit, rep.Docs)
	fmt.Fprintln(w, "| scenario | store | req/s | p50 | p99 | CPU µs/req | ratio to bare | DB CPU µs/req | server RSS |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	flagged := 0
	for _, r := range rep.Results {
		name := r.Scenario
		if r.Errors > 0 {
			name += fmt.Sprintf(" **(%d errors)**", r.Errors)
			flagged++
		}
		ratio, db := "", ""
		if r.RatioToBare > 0 && r.ID != "bare" {
			ratio = fmt.Sprintf("%.1f×", r.RatioToBare)
		}
		if r.DBCPUPerRequest > 0 {
			db = fmt.Sprintf("%.0f", r.DBCPUPerRequest)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.0f | %s | %s | %d MiB |\n", name, r.Store,
			thousands(r.PerSecond), ms(r.P50), ms(r.P99), r.CPUPerRequest, ratio, db, r.RSSKiB>>10)
	}
	if flagged > 0 {
		fmt.Fprintf(w, "\n%d scenario(s) had errors (any answer but 2xx); their figures do not count:\n", flagged)
		for _, r := range rep.Results {
			if r.Errors > 0 {
				fmt.Fprintf(w, "  %s on %s: %d of %d, first: %s\n", r.Scenario, r.Store, r.Errors, r.Requests, r.FirstError)
			}
		}
	}
}

func (rep report) writeJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ms formats milliseconds with about three significant digits.
func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
