package upgrade

import (
	"fmt"
	"strings"
)

// A clue is a fact of a deployment's files that bounds its major version:
// a key that was renamed away in version `before` (the files are older), or
// one that first appeared in version `since` (the files are at least that).
type clue struct {
	role   role
	key    string
	before int // the files are older than this version
	since  int // the files are at least this version
}

var clues = []clue{
	{role: roleConfig, key: "notification.logSuccessfulBroadcastDispatches", before: 3},
	{role: roleConfig, key: "smtp", before: 4},
	{role: roleConfig, key: "inboundSmtpServer", before: 4},
	{role: roleConfig, key: "smsServiceProvider", before: 4},
	{role: roleConfig, key: "defaultSmtp", before: 4},
	{role: roleConfig, key: "notification.handleBounce", before: 4},
	{role: roleConfig, key: "notification.handleListUnsubscribeByEmail", before: 4},
	{role: roleConfig, key: "subscription.unsubscriptionEmailDomain", before: 4},
	{role: roleConfig, key: "sms.twilio", before: 4},
	{role: roleConfig, key: "sms.swift", before: 4},
	{role: roleConfig, key: "email.throttle.minTime", before: 6},
	{role: roleConfig, key: "sms.throttle.minTime", before: 6},
	{role: roleConfig, key: "email.throttle.clientOptions", before: 6},
	{role: roleConfig, key: "sms.throttle.clientOptions", before: 6},
	{role: roleConfig, key: "email.throttle.datastore", before: 6},
	{role: roleConfig, key: "sms.throttle.datastore", before: 6},
	{role: roleConfig, key: "notification.broadcastSubRequestBatchSize", before: 6},
	{role: roleDatasource, key: "url", before: 5},
	{role: roleDatasource, key: "host", before: 5},
	{role: roleDatasource, key: "hostname", before: 5},
	{role: roleDatasource, key: "port", before: 5},
	{role: roleDatasource, key: "database", before: 5},
	{role: roleDatasource, key: "connector", before: 5},

	{role: roleConfig, key: "notification.guaranteedBroadcastPushDispatchProcessing", since: 3},
	{role: roleConfig, key: "email.smtp", since: 4},
	{role: roleConfig, key: "email.inboundSmtpServer", since: 4},
	{role: roleConfig, key: "email.bounce", since: 4},
	{role: roleConfig, key: "email.listUnsubscribeByEmail", since: 4},
	{role: roleConfig, key: "sms.provider", since: 4},
	{role: roleConfig, key: "sms.providerSettings", since: 4},
	{role: roleDatasource, key: "uri", since: 5},
	{role: roleConfig, key: "email.throttle.max", since: 6},
	{role: roleConfig, key: "email.throttle.duration", since: 6},
	{role: roleConfig, key: "sms.throttle.max", since: 6},
	{role: roleConfig, key: "sms.throttle.duration", since: 6},
	{role: roleConfig, key: "queue.connection", since: 6},
}

// evidence is what the files say about their version: the range
// [lo, hi) with the facts that set each bound.
type evidence struct {
	lo, hi     int
	loKey      bool // lo comes from a key, not only from the layout
	loWhy      string
	hiWhy      string
	weakHi     int // from the layout alone (environment files beside local ones)
	weakHiWhy  string
	noFiles    bool
	parseError error
}

func (e *evidence) older(v int, why string) {
	if v < e.hi {
		e.hi, e.hiWhy = v, why
	}
}

func (e *evidence) newer(v int, why string) {
	if v > e.lo {
		e.lo, e.loWhy = v, why
	}
}

// gather reads the clues of a workspace. Files that do not parse are
// reported by the step that needs them; detection only skips them.
func gather(w *workspace) evidence {
	e := evidence{lo: 1, hi: 7, weakHi: 7}
	server := false
	for _, r := range []role{roleConfig, roleMiddleware, roleDatasource} {
		if fs := w.list("server/", r); len(fs) > 0 {
			server = true
			e.older(2, fmt.Sprintf("%s is in the v1 layout (server/)", fs[0].rel))
		}
	}
	for _, rel := range sortedFiles(w, isV1Default) {
		server = true
		e.older(2, fmt.Sprintf("%s is a file of the v1 release (server/)", rel))
	}
	src := false
	envNames, local := map[string]bool{}, false
	for _, r := range []role{roleConfig, roleMiddleware, roleDatasource} {
		for _, f := range w.list(srcDir(r), r) {
			src = true
			if !server {
				e.newer(2, fmt.Sprintf("%s is in the v2+ layout (src/)", f.rel))
			}
			if f.role == roleConfig {
				if f.env == "local" {
					local = true
				} else {
					envNames[f.env] = true
				}
			}
			d, err := w.doc(f.rel)
			if err != nil {
				if e.parseError == nil {
					e.parseError = err
				}
				continue
			}
			for _, c := range clues {
				if c.role != f.role {
					continue
				}
				if n, ok := d.get(p(c.key)); ok {
					where := fmt.Sprintf("%s:%d has %s", f.rel, n.line, c.key)
					if c.before > 0 {
						e.older(c.before, where)
					} else if c.since > e.lo {
						e.newer(c.since, where)
						e.loKey = true
					}
				}
			}
		}
	}
	if len(envNames) > 0 && local {
		e.weakHi = 4
		e.weakHiWhy = fmt.Sprintf("environment config files (%s) sit beside config.local", strings.Join(sortedKeys(envNames), ", "))
	}
	e.noFiles = !server && !src
	return e
}

// detect returns the version the files show, or an error saying why it
// cannot tell.
func (e evidence) detect() (int, error) {
	if e.noFiles {
		return 0, fmt.Errorf("no config, middleware or datasource files named for an environment (config.local.js, …) in server/ or src/")
	}
	if e.lo >= e.hi {
		return 0, fmt.Errorf("the files disagree: %s (v%d or later), but %s (older than v%d)", e.loWhy, e.lo, e.hiWhy, e.hi)
	}
	hi, hiWhy := e.hi, e.hiWhy
	if e.weakHi < hi && e.weakHi > e.lo {
		hi, hiWhy = e.weakHi, e.weakHiWhy
	}
	if hi-e.lo == 1 {
		return e.lo, nil
	}
	if hi == 7 && e.lo == 6 {
		return 6, nil
	}
	why := []string{}
	if e.loWhy != "" {
		why = append(why, e.loWhy)
	}
	if hiWhy != "" {
		why = append(why, hiWhy)
	}
	last := hi - 1
	if last > 6 {
		last = 6
	}
	return 0, fmt.Errorf("the files fit v%d to v%d (%s)", e.lo, last, strings.Join(why, "; "))
}
