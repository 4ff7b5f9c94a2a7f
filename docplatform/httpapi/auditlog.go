package httpapi

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/event"
	"github.com/govkit/govkit/internal/httperr"
)

type auditView struct {
	ID     int64       `json:"id"`
	Event  event.Event `json:"event"`
	Action string      `json:"action"`
	Actor  string      `json:"actor"`
	// ActorName is the person's name as the platform knows it (their
	// profile), for entries such as sign-ins that belong to no group whose
	// member list would name them; absent for keys and unknown ids.
	ActorName string `json:"actorName,omitempty"`
	GroupID   string `json:"groupId"`
	Outcome   string `json:"outcome"`
	IP        string `json:"ip"`
	Detail    string `json:"detail"`
}

func viewAudit(e docplatform.AuditEntry, name string) auditView {
	return auditView{e.ID, e.When, string(e.Action), e.Actor, name, e.GroupID, string(e.Outcome), e.IP, e.Detail}
}

// actorNames looks up the names of the people a page of entries names,
// once each.
func actorNames(ctx context.Context, rs ResourceStore, entries []docplatform.AuditEntry) map[string]string {
	names := map[string]string{}
	for _, e := range entries {
		if e.Actor == "" || strings.HasPrefix(e.Actor, "apikey:") {
			continue
		}
		if _, done := names[e.Actor]; done {
			continue
		}
		names[e.Actor] = ""
		if u, err := rs.User(ctx, e.Actor); err == nil {
			names[e.Actor] = cmp.Or(u.Name, u.PreferredUsername, u.Email)
		}
	}
	return names
}

// auditScope decides which groups' entries the caller may read: a system
// admin every group (or the one asked for), anyone else the groups they
// administer. Asking for a group one does not administer, or
// administering none, is 403. Entries about no group (logins, logouts)
// are for system admins only.
func (s *Server) auditScope(w http.ResponseWriter, r *http.Request) (docplatform.AuditFilter, bool) {
	id := IdentityFrom(r.Context())
	gid := r.URL.Query().Get("groupId")
	var f docplatform.AuditFilter
	if gid != "" && !validID(w, "groupId", gid) {
		return f, false
	}
	switch {
	case id.IsSystemAdmin && gid == "":
		f.AllGroups = true
	case id.IsSystemAdmin:
		f.GroupIDs = []string{gid}
	case gid != "":
		if !s.allow(w, r, gid, docplatform.RoleAdmin) {
			return f, false
		}
		f.GroupIDs = []string{gid}
	default:
		for g, role := range id.GroupRoles {
			if role == docplatform.RoleAdmin {
				f.GroupIDs = append(f.GroupIDs, g)
			}
		}
		if len(f.GroupIDs) == 0 {
			s.deny(w, r, "", "The audit log is for system admins and group admins")
			return f, false
		}
	}
	return f, true
}

// listAudit: GET /api/audit?groupId&action&from&to&limit&before, newest
// first. from and to are RFC 3339 instants (from inclusive, to exclusive);
// before is nextBefore of the previous page.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	f, ok := s.auditScope(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f.Action = docplatform.AuditAction(q.Get("action"))
	if f.From, f.To, ok = timeRange(w, r, "from", "to"); !ok {
		return
	}
	limit, ok := intParam(w, r, "limit", 100, 1, 1000)
	if !ok {
		return
	}
	f.Limit = limit + 1
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			httperr.Write(w, http.StatusBadRequest, "before must be a positive entry id")
			return
		}
		f.BeforeID = n
	}
	entries, err := rs.ListAudit(r.Context(), f)
	if err != nil {
		s.internalError(w, r, "list audit", err)
		return
	}
	var next *int64
	if len(entries) > limit {
		entries = entries[:limit]
		id := entries[limit-1].ID
		next = &id
	}
	names := actorNames(r.Context(), rs, entries)
	out := make([]auditView, len(entries))
	for i, e := range entries {
		out[i] = viewAudit(e, names[e.Actor])
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": out, "nextBefore": next})
}

// reportLimit bounds one report; a longer one says it was truncated.
const reportLimit = 10000

type reportEntry struct {
	ID      int64       `json:"id"`
	Event   event.Event `json:"event"`
	Action  string      `json:"action"`
	Actor   string      `json:"actor"`
	GroupID string      `json:"groupId"`
	Outcome string      `json:"outcome"`
}

type reportDay struct {
	Event  event.Event               `json:"event"`
	Counts map[string]map[string]int `json:"counts"`
}

// auditReport: GET /api/audit/report?from=YYYY-MM-DD&to=YYYY-MM-DD
// [&timeZone=Area/City][&groupId]. The report view is in date form: each
// entry's datetime Event is converted with event.Event.ToDateForm in the
// report's time zone (default UTC; the date an instant falls on depends on
// where it is read), and the range is the whole days from..to in that
// zone, inclusive. Days come with counts per action and outcome; entries
// oldest first.
func (s *Server) auditReport(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	f, ok := s.auditScope(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	loc := time.UTC
	if tz := q.Get("timeZone"); tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil || tz == "Local" {
			httperr.Write(w, http.StatusBadRequest, "timeZone must be an IANA time zone name such as America/Vancouver")
			return
		}
		loc = l
	}
	var days [2]time.Time
	for i, name := range []string{"from", "to"} {
		v := q.Get(name)
		if v == "" {
			httperr.Write(w, http.StatusBadRequest, name+" is required (YYYY-MM-DD)")
			return
		}
		ev, err := event.Parse([]byte(`{"start_date":` + strconv.Quote(v) + `}`))
		if err != nil {
			httperr.Write(w, http.StatusBadRequest, name+" must be a date YYYY-MM-DD")
			return
		}
		d, _ := ev.Start().Date()
		days[i] = time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
	}
	if days[1].Before(days[0]) {
		httperr.Write(w, http.StatusBadRequest, "to must not be before from")
		return
	}
	if days[1].Sub(days[0]) > 366*24*time.Hour {
		httperr.Write(w, http.StatusBadRequest, "a report covers at most 366 days")
		return
	}
	from, to := days[0], days[1].AddDate(0, 0, 1)
	f.From, f.To, f.Limit = &from, &to, reportLimit+1
	entries, err := rs.ListAudit(r.Context(), f)
	if err != nil {
		s.internalError(w, r, "audit report", err)
		return
	}
	truncated := len(entries) > reportLimit
	if truncated {
		entries = entries[:reportLimit]
	}
	out := make([]reportEntry, 0, len(entries))
	byDay := map[string]*reportDay{}
	dayList := []*reportDay{}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		d, err := e.When.ToDateForm(loc)
		if err != nil {
			s.internalError(w, r, "audit report: convert", err)
			return
		}
		out = append(out, reportEntry{e.ID, d, string(e.Action), e.Actor, e.GroupID, string(e.Outcome)})
		key := d.Start().String()
		day := byDay[key]
		if day == nil {
			day = &reportDay{Event: d, Counts: map[string]map[string]int{}}
			byDay[key] = day
			dayList = append(dayList, day)
		}
		if day.Counts[string(e.Action)] == nil {
			day.Counts[string(e.Action)] = map[string]int{}
		}
		day.Counts[string(e.Action)][string(e.Outcome)]++
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"from": q.Get("from"), "to": q.Get("to"), "timeZone": loc.String(),
		"days": dayList, "entries": out, "truncated": truncated,
	})
}

// intParam reads an integer query parameter within [lo, hi].
func intParam(w http.ResponseWriter, r *http.Request, name string, def, lo, hi int) (int, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		httperr.Write(w, http.StatusBadRequest, name+" must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
		return 0, false
	}
	return n, true
}
