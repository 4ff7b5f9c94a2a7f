// Package metrics holds what both services do with their Prometheus
// metrics besides counting: serve them on a listener of their own
// (Listen), apart from the API, so that no proxy in front of a service
// exposes them and a scraper needs no credential; and list the names a
// collector describes (Names), whether or not it has series yet (a
// counter vector nobody incremented is described but not gathered), for
// the tests of the alert rules in deploy/.
package metrics

import (
	"regexp"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

// fqName finds the name in a Desc's String(), the only place client_golang
// shows it.
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names returns the sorted names c describes.
func Names(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	seen := map[string]bool{}
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
