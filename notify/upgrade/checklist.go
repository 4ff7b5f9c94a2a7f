package upgrade

import (
	"fmt"
	"strings"
)

const backupStep = "Back up the database (mongodump --gzip --archive) and the deployment directory before anything else."

const operatorTable = `Client code: filter operators are MongoDB's now (the tool cannot rewrite saved client code):
  eq → $eq          and → $and        or → $or
  gt, gte → $gt, $gte               lt, lte → $lt, $lte
  inq, nin → $in, $nin              near → $near       neq → $ne
  between → no equivalent: combine $gt, $and and $lt
  like, nlike (also with options: i) → $regex (with $options: "i")
  regexp → $regex
Order: ["serviceName asc"] becomes [["serviceName","asc"]] or "serviceName".`

// manualSteps is the numbered checklist of what a step leaves to the
// operator, tailored to what the tool saw (files, environment, database).
func manualSteps(from int, o *Options, w *workspace, db dbFacts) []string {
	s := []string{backupStep}
	cfg := func(key string) (node, string, bool) {
		for _, f := range w.list("src/", roleConfig) {
			if d, err := w.doc(f.rel); err == nil {
				if n, ok := d.get(p(key)); ok {
					return n, f.rel, true
				}
			}
		}
		return node{}, "", false
	}
	switch from {
	case 1:
		s = append(s,
			"Administrator passwords are not migrated: v2 keeps them in UserCredential. Set a new password for every administrator with POST /api/administrators/{id}/user-credential {\"password\": …}; it must have 10 or more characters with an upper-case letter, a lower-case letter, a digit and one of !_@#&$*.",
			"Client code: array query parameters only in the repeated form (&additionalServices=a&additionalServices=b, not [\"a\",\"b\"]); date-time values in full ISO 8601 with time and Z (2020-01-01T00:00:00Z); most PATCH, PUT and DELETE by id answer 204 instead of 200 (subscription update, replace and delete keep 200); login is open to non-administrators.",
		)
		if len(w.list("src/", roleMiddleware)) > 0 {
			s = append(s, "Check the middleware files: only the `all` (every request, web console included) and `apiOnly` (API requests) groups exist now; LoopBack phases other than initial and routes:before were not carried over (see the notes).")
		}
	case 2:
		s = append(s, "Client code reading failedDispatches / successDispatches of notifications must read dispatch.failed / dispatch.successful.")
		if !db.checked {
			s = append(s, "Rename the stored fields in mongosh (the tool does it with --database URI on MongoDB 4.4 or later):\n"+shellRenameDispatches)
		}
		if n, rel, ok := cfg("notification.guaranteedBroadcastPushDispatchProcessing"); ok {
			s = append(s, fmt.Sprintf("notification.guaranteedBroadcastPushDispatchProcessing is %s in %s (it was logSuccessfulBroadcastDispatches); true makes broadcasts survive a node failure.", strings.TrimSpace(n.src), rel))
		} else {
			s = append(s, "notification.guaranteedBroadcastPushDispatchProcessing now defaults to true (logSuccessfulBroadcastDispatches defaulted to false): every subscriber of a broadcast is processed even if a node dies. Set it to false in src/config.local.js only if you prefer speed over that guarantee.")
		}
	case 3:
		s = append(s, "Helm chart: the chart now includes Redis with authentication; set redis.auth.password in helm/values.local.yaml.")
		if w.merged != "" {
			s = append(s, fmt.Sprintf("From v4 the local files (src/config.local.*, middleware.local.*, datasources/db.datasource.local.*) take precedence over the environment's files. The files of %q were merged into the local ones with their values winning, so the effective config is unchanged; keep new settings in the local files.", w.merged))
		} else {
			s = append(s, "From v4 the local files (src/config.local.*, middleware.local.*, datasources/db.datasource.local.*) take precedence over the environment's files (config.<NODE_ENV>.*): keep settings that must win in the local files.")
		}
	case 4:
		if db.checked {
			if db.replicaSet != "" {
				s = append(s, fmt.Sprintf("MongoDB must be a replica set: the server is a member of replica set %q.", db.replicaSet))
			} else {
				s = append(s, "MongoDB must be a replica set, and the server at --database is not a replica set member: convert it (rs.initiate()) and add ?replicaSet=… to the uri.")
			}
		} else {
			s = append(s, "MongoDB must be a replica set (the Helm chart enables one by default); add ?replicaSet=… to the uri if needed.")
		}
		if exists(w.dir, "server/database/data.json") {
			s = append(s, "server/database/data.json holds data of the LoopBack in-memory database: it is not migrated; move what you need by hand.")
		} else {
			s = append(s, "Data of the default in-memory database (server/database/data.json) is not migrated automatically.")
		}
		s = append(s, operatorTable)
		switch {
		case len(db.collisions) > 0:
			var b strings.Builder
			b.WriteString("Administrator emails must differ by more than case. Change or remove one of each of:")
			for _, g := range db.collisions {
				b.WriteString("\n  " + strings.Join(g, ", "))
			}
			s = append(s, b.String())
		case db.checked:
			s = append(s, "Administrator emails are unique case-insensitively from v5: checked, none collide.")
		default:
			s = append(s, "Administrator emails must differ by more than case from v5; check with --database URI, or in mongosh:\n"+shellEmailCollisions)
		}
		s = append(s,
			"Subscriptions created by anonymous users keep their data field now, and {subscription::…} tokens are left as written in confirmation request and duplicated-subscription messages: review those templates.",
			"The inbound SMTP server takes its settings only from the config files (no command-line arguments or environment variables).",
			"Helm chart: change mongodb.auth.password (one value) to mongodb.auth.passwords (a list) in helm/values.local.yaml. Chart upgrades: back up, helm uninstall, delete the MongoDB volume claims, install the v5 release, restore.",
		)
	case 5:
		switch {
		case db.fcv != "":
			msg, ok := fcvVerdict(db.serverVersion, db.fcv)
			mark := "checked"
			if !ok {
				mark = "ACTION NEEDED"
			}
			s = append(s, fmt.Sprintf("MongoDB 8 comes with the v6 chart: feature compatibility version %s, %s (%s).", db.fcv, msg, mark))
		default:
			s = append(s, "MongoDB 8 comes with the v6 chart: on MongoDB 7 set the feature compatibility version to 7.0 first:\n"+shellFCV)
		}
		switch {
		case !o.HasNodeRole:
			s = append(s, "NOTIFYBC_NODE_ROLE is not set here: nothing to change (check the other nodes of the deployment: `slave` becomes `secondary`, any other value is removed).")
		case o.NodeRole == "slave":
			s = append(s, "NOTIFYBC_NODE_ROLE is `slave`: set it to `secondary` (v6 refuses `slave`).")
		default:
			s = append(s, fmt.Sprintf("NOTIFYBC_NODE_ROLE is %q: remove the variable (in v6 an unset role does what every non-slave node did).", o.NodeRole))
		}
		if n, rel, ok := cfg("queue.connection"); ok {
			s = append(s, fmt.Sprintf("The queue backend (Redis) is required: queue.connection in %s (line %d) must reach it.", rel, n.line))
		} else {
			s = append(s, "The queue backend (Redis) is required: set queue.connection {host, port} in src/config.local.js (default 127.0.0.1:6379).")
		}
		if _, rel, ok := cfg("email.smtp"); ok {
			s = append(s, fmt.Sprintf("Without email.smtp v6 sends through a public test mail service; email.smtp is set in %s.", rel))
		} else {
			s = append(s, "email.smtp is not set: v6 then sends through a public test mail service instead of the local host. Configure email.smtp for production.")
		}
	}
	return s
}
