package mongostore

import (
	"fmt"
	"slices"
	"testing"
)

// TestServerIndexesServeTheConsoleReads checks, by MongoDB's rules for
// answering a query from an index, that the indexes EnsureIndexes makes
// serve every list and count the console and the API's paging make —
// equality on any combination of the filter fields the console offers,
// sorted by date — without a collection scan, a sort in memory of more
// than a user's or an address's few records, or (for counts) reading
// documents:
//   - a count whose equality fields E are the first len(E) keys of an
//     index (any order) is one COUNT_SCAN over a range of index keys;
//   - a page sorted by S with equality on E is an IXSCAN in sort order
//     when an index's keys are E (any order) then S, or when an index
//     starts with S and holds every field of E, which MongoDB checks on
//     the index keys before reading a document;
//   - an equality on a selective field (a user or an address) is an
//     IXSCAN of an index that starts with it; its few records are sorted
//     in memory.
func TestServerIndexesServeTheConsoleReads(t *testing.T) {
	type read struct {
		eq   []string
		sort string // "": a count
	}
	subsets := func(fields ...string) [][]string {
		var out [][]string
		for mask := 0; mask < 1<<len(fields); mask++ {
			var s []string
			for i, f := range fields {
				if mask&(1<<i) != 0 {
					s = append(s, f)
				}
			}
			out = append(out, s)
		}
		return out
	}
	reads := func(filterFields []string, sorts []string, counts bool, selective ...string) []read {
		var out []read
		for _, e := range subsets(filterFields...) {
			for _, s := range sorts {
				out = append(out, read{eq: e, sort: s})
			}
			if counts {
				out = append(out, read{eq: e})
			}
		}
		for _, f := range selective {
			out = append(out, read{eq: []string{f}, sort: "created"}, read{eq: []string{f}})
		}
		return out
	}
	cases := []struct {
		sch       *schema
		reads     []read
		selective []string
	}{
		{subscriptionSchema, reads([]string{"serviceName", "channel", "state"}, []string{"created", "updated", "serviceName", "userChannelId", "state"}, true, "userChannelId", "userId"), []string{"userChannelId", "userId"}},
		{notificationSchema, reads([]string{"serviceName", "channel", "state", "isBroadcast"}, []string{"created", "updated", "serviceName"}, false), nil},
		{notificationSchema, reads([]string{"serviceName", "channel", "state"}, nil, true), nil},
		{bounceSchema, reads([]string{"state", "channel"}, []string{"created", "updated"}, true, "userChannelId"), []string{"userChannelId"}},
	}
	for _, c := range cases {
		ixs := c.sch.serverIndexes()
		keysOf := func(ix indexSpec) []string {
			var ks []string
			for _, k := range ix.Keys {
				ks = append(ks, k.Key)
			}
			return ks
		}
		sameSet := func(a, b []string) bool {
			a, b = slices.Clone(a), slices.Clone(b)
			slices.Sort(a)
			slices.Sort(b)
			return slices.Equal(a, b)
		}
		served := func(r read) string {
			for _, ix := range ixs {
				if ix.Text {
					continue
				}
				ks := keysOf(ix)
				if len(r.eq) == 1 && slices.Contains(c.selective, r.eq[0]) && ks[0] == r.eq[0] {
					return ix.Name
				}
				if r.sort == "" {
					if len(r.eq) > 0 && len(ks) >= len(r.eq) && sameSet(ks[:len(r.eq)], r.eq) {
						return ix.Name
					}
					continue
				}
				if len(ks) > len(r.eq) && sameSet(ks[:len(r.eq)], r.eq) && ks[len(r.eq)] == r.sort {
					return ix.Name
				}
				if ks[0] == r.sort && !slices.ContainsFunc(r.eq, func(f string) bool { return !slices.Contains(ks, f) }) {
					return ix.Name
				}
			}
			return ""
		}
		for _, r := range c.reads {
			if r.sort == "" && len(r.eq) == 0 {
				continue // a count of everything is the collection's own count
			}
			name := fmt.Sprintf("%s eq %v sort %q", c.sch.name, r.eq, r.sort)
			if served(r) == "" {
				t.Errorf("%s: no index serves it by MongoDB's rules", name)
			}
		}
	}
}
