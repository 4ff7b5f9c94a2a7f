package upgrade

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// rewrite applies one step's file rewrites to a workspace.
type rewrite func(w *workspace, o *Options) error

var rewrites = map[int]rewrite{
	1: rewriteV1,
	2: rewriteV2,
	3: rewriteV3,
	4: rewriteV4,
	5: rewriteV5,
}

// v1 middleware phases that v2 keeps, by their new names.
var v1Phases = map[string]string{"initial": "all", "routes:before": "apiOnly"}

// rewriteV1 moves the LoopBack 3 files of server/ to the v2 layout in
// src/: config files as they are, middleware files with their phases
// re-keyed, datasource files unwrapped from their `db` entry.
func rewriteV1(w *workspace, o *Options) error {
	for _, r := range []role{roleConfig, roleMiddleware, roleDatasource} {
		for _, f := range w.list("server/", r) {
			target := srcName(r, f.env, f.ext)
			if _, clash := w.files[target]; clash {
				return fmt.Errorf("%s and %s both exist: remove the one that is not in use, then run again", f.rel, target)
			}
			var data []byte
			switch r {
			case roleConfig:
				data = w.files[f.rel]
			case roleMiddleware:
				d, err := w.doc(f.rel)
				if err != nil {
					return err
				}
				for _, k := range d.keys(nil) {
					if nk, ok := v1Phases[k]; ok {
						if err := d.rename([]string{k}, nk); err != nil {
							return err
						}
						w.act("%s: middleware phase %q → %q", f.rel, k, nk)
						continue
					}
					n, _ := d.get([]string{k})
					if err := d.del([]string{k}); err != nil {
						return err
					}
					w.note("%s:%d: LoopBack phase %q has no v2 equivalent and was not carried over (only `initial` → `all` and `routes:before` → `apiOnly` exist); its entries are in the backup", f.rel, n.line, k)
				}
				w.sync()
				data = w.files[f.rel]
			case roleDatasource:
				d, err := w.doc(f.rel)
				if err != nil {
					return err
				}
				for _, k := range d.keys(nil) {
					if k != "db" {
						w.note("%s: data source %q is not used by the service and was not carried over", f.rel, k)
					}
				}
				data, err = d.extract([]string{"db"})
				if err != nil {
					return fmt.Errorf("%w (the service reads only the `db` data source)", err)
				}
				w.act("%s: the `db` data source becomes the whole file", f.rel)
			}
			if f.ext == "js" && (strings.Contains(string(data), "__dirname") || strings.Contains(string(data), "require('.") || strings.Contains(string(data), `require(".`)) {
				w.note("%s uses __dirname or a relative require: it now runs from src/ instead of server/; check the paths", target)
			}
			w.remove(f.rel)
			w.write(target, data)
			w.act("%s → %s", f.rel, target)
		}
	}
	for _, rel := range sortedFiles(w, isV1Default) {
		w.remove(rel)
		w.act("%s removed: a default file of the v1 release (v2 has its defaults built in)", rel)
		w.note("%s was removed (it is in the backup): if you changed it rather than a config.local file, copy those settings into the matching src/ local file", rel)
	}
	return nil
}

func sortedFiles(w *workspace, keep func(string) bool) []string {
	var out []string
	for rel := range w.files {
		if keep(rel) {
			out = append(out, rel)
		}
	}
	sort.Strings(out)
	return out
}

// rewriteV2 renames notification.logSuccessfulBroadcastDispatches.
func rewriteV2(w *workspace, o *Options) error {
	for _, f := range w.list("src/", roleConfig) {
		d, err := w.doc(f.rel)
		if err != nil {
			return err
		}
		if err := renameKey(w, d, f.rel, "notification.logSuccessfulBroadcastDispatches", "notification.guaranteedBroadcastPushDispatchProcessing"); err != nil {
			return err
		}
	}
	return nil
}

// renameKey moves a value from one key to another, refusing when both are
// set to different values.
func renameKey(w *workspace, d configDoc, rel, from, to string) error {
	fp, tp := p(from), p(to)
	fv, ok := d.get(fp)
	if !ok {
		return nil
	}
	if tv, clash := d.get(tp); clash {
		if strings.TrimSpace(tv.src) != strings.TrimSpace(fv.src) {
			return fmt.Errorf("%s:%d: both %s and %s (line %d) are set, to different values; keep one, then run again", rel, fv.line, from, to, tv.line)
		}
		w.act("%s: %s removed (same value as %s)", rel, from, to)
		return d.del(fp)
	}
	if len(fp) == len(tp) && strings.Join(fp[:len(fp)-1], ".") == strings.Join(tp[:len(tp)-1], ".") {
		if err := d.rename(fp, tp[len(tp)-1]); err != nil {
			return err
		}
	} else if err := d.move(fp, tp); err != nil {
		return err
	}
	w.act("%s: %s → %s", rel, from, to)
	return nil
}

// rewriteV3 merges the environment's files into the local ones (the
// environment file took precedence before v4, so its values win) and
// applies the v4 key renames to every config file.
func rewriteV3(w *workspace, o *Options) error {
	env, err := chooseEnv(w, o)
	if err != nil {
		return err
	}
	if env != "" && w.ev.loKey && w.ev.lo >= 4 {
		for _, f := range w.list("src/", roleConfig) {
			if f.env == env {
				// Merging again would put the environment's values over the
				// local ones, the reverse of v4's precedence.
				return fmt.Errorf("a file of the wrong version: %s (v%d or later), so %s must not be merged into the local file again: from v4 the local file wins over it; if the deployment is at v4, run --from 4", w.ev.loWhy, w.ev.lo, f.rel)
			}
		}
	}
	if env != "" {
		for _, f := range append(w.list("src/", roleConfig), append(w.list("src/", roleMiddleware), w.list("src/datasources/", roleDatasource)...)...) {
			if f.env == env {
				w.merged = env
			}
		}
		for _, r := range []role{roleConfig, roleMiddleware} {
			if err := mergeEnv(w, r, env); err != nil {
				return err
			}
		}
		if err := replaceDatasource(w, env); err != nil {
			return err
		}
	}
	for _, f := range w.list("src/", roleConfig) {
		d, err := w.doc(f.rel)
		if err != nil {
			return err
		}
		for _, m := range [][2]string{
			{"smtp", "email.smtp"},
			{"defaultSmtp", "email.defaultSmtp"},
			{"inboundSmtpServer", "email.inboundSmtpServer"},
			{"email.inboundSmtpServer.bounce", "email.bounce"},
			{"notification.handleBounce", "email.bounce.enabled"},
			{"notification.handleListUnsubscribeByEmail", "email.listUnsubscribeByEmail.enabled"},
			{"smsServiceProvider", "sms.provider"},
		} {
			if err := renameKey(w, d, f.rel, m[0], m[1]); err != nil {
				return err
			}
		}
		if n, ok := d.get(p("sms")); ok && n.kind != kindObject {
			return fmt.Errorf("%s:%d: sms is not an object literal; move its provider settings under sms.providerSettings by hand", f.rel, n.line)
		}
		for _, k := range d.keys(p("sms")) {
			if k == "provider" || k == "providerSettings" || k == "throttle" {
				continue
			}
			if err := renameKey(w, d, f.rel, "sms."+k, "sms.providerSettings."+k); err != nil {
				return err
			}
		}
		if n, ok := d.get(p("subscription.unsubscriptionEmailDomain")); ok {
			if _, has := d.get(p("email.inboundSmtpServer.domain")); has {
				if err := d.del(p("subscription.unsubscriptionEmailDomain")); err != nil {
					return err
				}
				w.note("%s:%d: subscription.unsubscriptionEmailDomain removed; email.inboundSmtpServer.domain is already set and applies", f.rel, n.line)
			} else if err := renameKey(w, d, f.rel, "subscription.unsubscriptionEmailDomain", "email.inboundSmtpServer.domain"); err != nil {
				return err
			}
		}
	}
	return nil
}

// chooseEnv picks the environment whose files are merged: --env, else
// NODE_ENV, else the only one present.
func chooseEnv(w *workspace, o *Options) (string, error) {
	envs := map[string]bool{}
	for _, r := range []role{roleConfig, roleMiddleware, roleDatasource} {
		for _, f := range w.list(srcDir(r), r) {
			if f.env != "local" {
				envs[f.env] = true
			}
		}
	}
	chosen := o.Env
	if chosen == "" {
		chosen = o.NodeEnv
	}
	if chosen == "test" {
		return "", fmt.Errorf("environment %q: test files are skipped by the service and are not merged; give --env with the deployment's environment", chosen)
	}
	names := sortedKeys(envs)
	if chosen == "" {
		switch len(names) {
		case 0:
			return "", nil
		case 1:
			return names[0], nil
		}
		return "", fmt.Errorf("environment files for %s are present and none is chosen: give --env NAME (or set NODE_ENV) to name the one this deployment runs with", strings.Join(names, ", "))
	}
	for _, n := range names {
		if n != chosen {
			w.note("the files of environment %q are left in place: from v4 the local files take precedence over them when NODE_ENV=%s", n, n)
		}
	}
	return chosen, nil
}

// mergeEnv merges config.<env>.* (or middleware.<env>.*) into the local
// file and removes it.
func mergeEnv(w *workspace, r role, env string) error {
	var envFiles, localFiles []depFile
	for _, f := range w.list(srcDir(r), r) {
		switch f.env {
		case env:
			envFiles = append(envFiles, f)
		case "local":
			localFiles = append(localFiles, f)
		}
	}
	if len(envFiles) == 0 {
		return nil
	}
	envJS := false
	for _, f := range envFiles {
		envJS = envJS || f.ext != "json"
	}
	// The target is the last local file loaded (it wins over the others),
	// as long as it can hold the merged values.
	var target string
	for _, f := range localFiles {
		if f.ext != "json" || !envJS {
			target = f.rel
		}
	}
	if target == "" {
		if len(envFiles) == 1 {
			f := envFiles[0]
			to := srcName(r, "local", f.ext)
			data := w.files[f.rel]
			w.remove(f.rel)
			w.write(to, data)
			w.act("%s → %s (no local file to merge into)", f.rel, to)
			return nil
		}
		ext := "json"
		if envJS {
			ext = "js"
		}
		target = srcName(r, "local", ext)
		if ext == "js" {
			w.write(target, []byte("module.exports = {};\n"))
		} else {
			w.write(target, []byte("{}\n"))
		}
		if len(localFiles) > 0 {
			w.note("%s is created; %s stays and is loaded before it", target, localFiles[0].rel)
		}
	}
	dst, err := w.doc(target)
	if err != nil {
		return err
	}
	for _, f := range envFiles {
		src, err := w.doc(f.rel)
		if err != nil {
			return err
		}
		if sj, ok := src.(*jsFile); ok && len(sj.prelude) > 0 {
			dj, ok := dst.(*jsFile)
			if !ok {
				return fmt.Errorf("internal error: %s has declarations but %s is not JavaScript", f.rel, target)
			}
			if err := dj.carryPrelude(sj); err != nil {
				return err
			}
			w.act("%s: its top-level declarations are copied into %s", f.rel, target)
		}
		if err := mergeInto(dst, src, nil); err != nil {
			return err
		}
		w.sync()
		merged := string(w.files[target])
		for _, c := range commentsIn(string(w.files[f.rel])) {
			if !strings.Contains(merged, c) {
				w.note("%s: comment not kept by the merge: %s", f.rel, c)
			}
		}
		w.remove(f.rel)
		w.act("%s merged into %s (its values win, as they did before v4), then removed", f.rel, target)
	}
	return nil
}

// replaceDatasource: before v4 the datasource file loaded last was used
// whole, so the environment's file replaces the local one.
func replaceDatasource(w *workspace, env string) error {
	var envFiles, localFiles []depFile
	for _, f := range w.list("src/datasources/", roleDatasource) {
		switch f.env {
		case env:
			envFiles = append(envFiles, f)
		case "local":
			localFiles = append(localFiles, f)
		}
	}
	if len(envFiles) == 0 {
		return nil
	}
	winner := envFiles[len(envFiles)-1]
	data := w.files[winner.rel]
	for _, f := range append(localFiles, envFiles...) {
		w.remove(f.rel)
	}
	to := srcName(roleDatasource, "local", winner.ext)
	w.write(to, data)
	for _, f := range localFiles {
		w.act("%s removed: %s was the data source in use (a data source file is used whole, not merged)", f.rel, winner.rel)
	}
	w.act("%s → %s", winner.rel, to)
	for _, f := range envFiles[:len(envFiles)-1] {
		w.act("%s removed: %s was loaded after it and used instead", f.rel, winner.rel)
	}
	return nil
}

// LoopBack-only data source settings that the v5 driver does not take.
var loopbackDatasourceKeys = []string{"name", "connector", "file", "localStorage", "useNewUrlParser", "useUnifiedTopology",
	"allowExtendedOperators", "enableGeoIndexing", "enableOptimisedfindOrCreate", "strictObjectIDCoercion", "lazyConnect", "debug"}

// rewriteV4 turns LoopBack data source settings into a MongoDB uri plus
// driver options.
func rewriteV4(w *workspace, o *Options) error {
	for _, f := range w.list("src/datasources/", roleDatasource) {
		d, err := w.doc(f.rel)
		if err != nil {
			return err
		}
		if err := datasourceV5(w, d, f.rel); err != nil {
			return err
		}
	}
	return nil
}

func datasourceV5(w *workspace, d configDoc, rel string) error {
	get := func(k string) (node, bool) { return d.get([]string{k}) }
	if c, ok := get("connector"); ok && c.kind == kindStatic && c.static == "memory" {
		w.note("%s: the LoopBack in-memory database is not migrated: its data (server/database/data.json) must be moved by hand if needed", rel)
	}
	hostKeys := []string{"protocol", "hostname", "host", "port", "database", "db"}
	if _, ok := get("url"); ok {
		if err := renameKey(w, d, rel, "url", "uri"); err != nil {
			return err
		}
		for _, k := range hostKeys {
			if n, ok := get(k); ok {
				if err := d.del([]string{k}); err != nil {
					return err
				}
				w.note("%s:%d: %s removed: it was ignored because url is set", rel, n.line, k)
			}
		}
	} else {
		present := false
		for _, k := range hostKeys {
			if _, ok := get(k); ok {
				present = true
			}
		}
		if present {
			if _, ok := get("uri"); ok {
				return fmt.Errorf("%s: both uri and host/port/database are set; keep uri only, then run again", rel)
			}
			uri, err := buildURI(d)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			at := ""
			for _, k := range []string{"hostname", "host", "database", "db", "port", "protocol"} {
				if _, ok := get(k); ok && at == "" {
					at = k
				}
			}
			if err := d.rename([]string{at}, "uri"); err != nil {
				return err
			}
			if err := d.set([]string{"uri"}, uri); err != nil {
				return err
			}
			for _, k := range hostKeys {
				if k != at {
					if err := d.del([]string{k}); err != nil {
						return err
					}
				}
			}
			w.act("%s: host/port/database folded into uri", rel)
		}
	}
	for _, m := range [][2]string{{"username", "user"}, {"password", "pass"}} {
		if err := renameKey(w, d, rel, m[0], m[1]); err != nil {
			return err
		}
	}
	for _, k := range loopbackDatasourceKeys {
		if _, ok := get(k); ok {
			if err := d.del([]string{k}); err != nil {
				return err
			}
			w.act("%s: %s removed (LoopBack only)", rel, k)
		}
	}
	return nil
}

// buildURI folds LoopBack's host settings into a connection string the way
// the LoopBack MongoDB connector built it: protocol (default mongodb),
// hostname or host (default 127.0.0.1), port (default 27017, left out for
// mongodb+srv), database or db (default test). Credentials stay separate
// (user, pass) so they need no URL escaping.
func buildURI(d configDoc) (value, error) {
	type part struct {
		keys []string
		def  string
	}
	parts := []part{{[]string{"protocol"}, "mongodb"}, {[]string{"hostname", "host"}, "127.0.0.1"}, {[]string{"port"}, "27017"}, {[]string{"database", "db"}, "test"}}
	var vals [4]node
	var has [4]bool
	for i, pt := range parts {
		for _, k := range pt.keys {
			if n, ok := d.get([]string{k}); ok && !has[i] {
				vals[i], has[i] = n, true
			}
		}
	}
	staticAll := true
	strs := make([]string, 4)
	exprs := make([]string, 4)
	for i, pt := range parts {
		if !has[i] || (vals[i].kind == kindStatic && mayBeFalsy(vals[i])) {
			strs[i] = pt.def
			continue
		}
		n := vals[i]
		switch {
		case n.kind == kindStatic:
			switch v := n.static.(type) {
			case string:
				strs[i] = v
			case float64:
				strs[i] = formatNumber(v)
			default:
				return value{}, fmt.Errorf("%s (line %d) must be a string or number", parts[i].keys[0], n.line)
			}
		case n.kind == kindObject:
			return value{}, fmt.Errorf("%s (line %d) must be a string or number", parts[i].keys[0], n.line)
		default:
			staticAll = false
			e := strings.TrimSpace(n.src)
			if mayBeFalsy(n) {
				e = operand(e, n.expr) + " || " + jsString(pt.def)
			}
			exprs[i] = e
		}
	}
	if staticAll {
		u := strs[0] + "://" + strs[1]
		if strs[0] != "mongodb+srv" {
			u += ":" + strs[2]
		}
		return staticValue(u + "/" + strs[3]), nil
	}
	if has[0] && exprs[0] != "" {
		return value{}, fmt.Errorf("protocol (line %d) must be a literal to be folded into uri", vals[0].line)
	}
	var b strings.Builder
	b.WriteString("`")
	piece := func(i int) {
		if exprs[i] != "" {
			b.WriteString("${" + exprs[i] + "}")
		} else {
			b.WriteString(templateText(strs[i]))
		}
	}
	b.WriteString(templateText(strs[0] + "://"))
	piece(1)
	if strs[0] != "mongodb+srv" {
		b.WriteString(":")
		piece(2)
	}
	b.WriteString("/")
	piece(3)
	b.WriteString("`")
	return value{src: b.String()}, nil
}

func templateText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "`", "\\`")
	return strings.ReplaceAll(s, "${", "\\${")
}

// Bottleneck settings that v6's queue does not use.
var bottleneckKeys = []string{"id", "datastore", "maxConcurrent", "jobExpiration", "highWater", "strategy", "penalty",
	"reservoir", "reservoirRefreshInterval", "reservoirRefreshAmount", "reservoirIncreaseAmount", "reservoirIncreaseInterval",
	"reservoirIncreaseMaximum", "clearDatastore", "timeout", "trackDoneStatus", "rejectOnDrop", "expiration", "Redis", "clusterNodes", "connection"}

// rewriteV5 moves the throttle's Redis connection to queue.connection and
// turns Bottleneck's minTime into the queue limiter's max and duration.
func rewriteV5(w *workspace, o *Options) error {
	for _, f := range w.list("src/", roleConfig) {
		d, err := w.doc(f.rel)
		if err != nil {
			return err
		}
		var conn []string
		for _, ch := range []string{"email", "sms"} {
			tp := ch + ".throttle"
			if n, ok := d.get(p(tp)); !ok || n.kind != kindObject {
				if ok && hasAny(n.src, "minTime", "clientOptions") {
					return fmt.Errorf("%s:%d: %s is not an object literal; rewrite it by hand (max, duration; queue.connection)", f.rel, n.line, tp)
				}
				continue
			}
			if n, ok := d.get(p(tp + ".minTime")); ok {
				max, dur, err := limiterFor(n)
				if err != nil {
					return fmt.Errorf("%s:%d: %s.minTime: %w", f.rel, n.line, tp, err)
				}
				for _, k := range []string{"max", "duration"} {
					if x, ok := d.get(p(tp + "." + k)); ok {
						return fmt.Errorf("%s:%d: %s.%s is set beside minTime; keep one of them, then run again", f.rel, x.line, tp, k)
					}
				}
				if err := d.rename(p(tp+".minTime"), "max"); err != nil {
					return err
				}
				if err := d.set(p(tp+".max"), staticValue(max)); err != nil {
					return err
				}
				if err := d.set(p(tp+".duration"), staticValue(dur)); err != nil {
					return err
				}
				w.act("%s: %s.minTime %s → max %s, duration %s", f.rel, tp, strings.TrimSpace(n.src), formatNumber(max), formatNumber(dur))
			}
			if _, ok := d.get(p(tp + ".clientOptions")); ok {
				conn = append(conn, tp+".clientOptions")
			}
			for _, k := range bottleneckKeys {
				if _, ok := d.get(p(tp + "." + k)); ok {
					if err := d.del(p(tp + "." + k)); err != nil {
						return err
					}
					w.act("%s: %s.%s removed (Bottleneck only)", f.rel, tp, k)
				}
			}
		}
		if len(conn) > 0 {
			first, _ := d.get(p(conn[0]))
			for _, c := range conn[1:] {
				other, _ := d.get(p(c))
				if normalizeSrc(other.src) != normalizeSrc(first.src) {
					return fmt.Errorf("%s:%d: %s and %s (line %d) differ, and v6 has one queue.connection: make them equal or remove one, then run again", f.rel, first.line, conn[0], c, other.line)
				}
			}
			if q, ok := d.get(p("queue.connection")); ok {
				if normalizeSrc(q.src) != normalizeSrc(first.src) {
					return fmt.Errorf("%s:%d: queue.connection is already set and differs from %s; keep one, then run again", f.rel, q.line, conn[0])
				}
				if err := d.del(p(conn[0])); err != nil {
					return err
				}
			} else if err := d.move(p(conn[0]), p("queue.connection")); err != nil {
				return err
			}
			w.act("%s: %s → queue.connection", f.rel, conn[0])
			for _, c := range conn[1:] {
				if err := d.del(p(c)); err != nil {
					return err
				}
				w.act("%s: %s removed (same as queue.connection)", f.rel, c)
			}
		}
		for _, k := range []string{"notification.broadcastSubRequestBatchSize", "email.defaultSmtp"} {
			if _, ok := d.get(p(k)); ok {
				if err := d.del(p(k)); err != nil {
					return err
				}
				w.act("%s: %s removed (no longer used in v6)", f.rel, k)
			}
		}
	}
	return nil
}

func hasAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func normalizeSrc(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.ReplaceAll(s, `"`, `'`), ",", " ")), " ")
}

// limiterFor converts Bottleneck's minTime (ms between jobs) into the
// limiter's max jobs per duration ms: max = 1000/minTime per 1000 ms when
// that is a whole number, else 1 per minTime ms.
func limiterFor(n node) (max, duration float64, err error) {
	mt, ok := n.static.(float64)
	if n.kind != kindStatic || !ok {
		return 0, 0, fmt.Errorf("%s is not a number literal; set max and duration by hand (minTime = duration / max)", strings.TrimSpace(n.src))
	}
	if mt <= 0 || math.IsInf(mt, 0) || math.IsNaN(mt) {
		return 0, 0, fmt.Errorf("%s: minTime must be a positive number of milliseconds; to send without a limit set enabled: false", formatNumber(mt))
	}
	q := 1000 / mt
	if q == math.Trunc(q) && q*mt == 1000 {
		return q, 1000, nil
	}
	return 1, mt, nil
}
