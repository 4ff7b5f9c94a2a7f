package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/access"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/query"
)

// The notification routes, as the original's, with these decisions where
// it is silent or leaks:
//
//   - A user (AuthenticatedUser) sees in-app notifications addressed to
//     them (userChannelId or userId) or broadcast, that are currently valid
//     (validTill not past, invalidBefore not future), not in state deleted
//     and not deleted by them; a broadcast they read shows state "read".
//     (The original lists deleted ones, leaving them to the client.) The
//     list, the count and GET by id apply the same restriction inside the
//     query, so counts, skip and limit agree with what the list shows.
//     Users never see readBy, deletedBy, createdBy, updatedBy or dispatch,
//     and cannot filter, sort or project on them.
//   - PATCH by a user changes only state: new, read or deleted (anything
//     else, or no state, is 400; the original answers 404 without a state).
//     On a broadcast, read and deleted add the user to readBy or deletedBy
//     and new takes them out of readBy; the notification's own state is
//     unchanged. A notification the user may not see is 404.
//   - Unknown ids are 404 everywhere (the original answers an empty 200 on
//     GET by id).
//   - channel must be inApp, email or sms and serviceName is required (400).
//   - PUT replaces the dispatch results too: a body without dispatch is a
//     fresh broadcast; one carrying dispatch (as GET shows it) resumes, and
//     nobody recorded is sent to again.
//   - Date-times must be full ISO 8601 with Z (400 otherwise), and a
//     broadcastPushNotificationSubscriptionFilter must compile (400).
func init() { routeGroups = append(routeGroups, (*Server).notificationRoutes) }

type notifications struct {
	s *Server
	d *dispatch.Dispatcher
	// marks serialises readBy/deletedBy updates of one notification in
	// this process: the embedded store loses concurrent $addToSet updates
	// of one document.
	marks keyedMutex
}

func (s *Server) notificationRoutes() {
	if s.store == nil || s.disp == nil {
		return
	}
	h := &notifications{s: s, d: s.disp}
	const tag = "notification"
	s.handle(route{method: "GET", path: "/notifications/count", roles: signedIn, tag: tag, summary: "count notifications", params: []param{whereParam}, response: "count", h: h.count})
	s.handle(route{method: "GET", path: "/notifications", roles: signedIn, tag: tag, summary: "get notifications", params: []param{filterParam}, response: "[]Notification", h: h.list})
	s.handle(route{method: "GET", path: "/notifications/{id}", roles: signedIn, tag: tag, summary: "get a notification by id", params: []param{pathID, filterParam}, response: "Notification", h: h.get})
	s.handle(route{method: "POST", path: "/notifications", roles: adminsOnly, tag: tag, summary: "create and send a notification", body: "Notification", response: "Notification", h: h.create})
	s.handle(route{method: "PUT", path: "/notifications/{id}", roles: adminsOnly, tag: tag, summary: "replace a notification and send it", params: []param{pathID}, body: "Notification", status: http.StatusNoContent, h: h.replace})
	s.handle(route{method: "PATCH", path: "/notifications/{id}", roles: signedIn, tag: tag, summary: "update a notification (users: in-app state only)", params: []param{pathID}, body: "Notification", status: http.StatusNoContent, h: h.patch})
	s.handle(route{method: "DELETE", path: "/notifications/{id}", roles: signedIn, tag: tag, summary: "delete a notification (sets state deleted)", params: []param{pathID}, status: http.StatusNoContent, h: h.delete})
}

// userID is the caller's id when the caller is an AuthenticatedUser.
func userID(r *http.Request) (string, bool) {
	c := caller(r)
	return c.SecurityID, c.Role == notify.RoleAuthenticatedUser && c.SecurityID != ""
}

// audience restricts a query to the in-app notifications a user may touch:
// addressed to them or broadcast.
func audience(me string) bson.D {
	return bson.D{
		{Key: "channel", Value: notify.ChannelInApp},
		{Key: "$or", Value: bson.A{
			bson.D{{Key: "isBroadcast", Value: true}},
			bson.D{{Key: "userChannelId", Value: me}},
			bson.D{{Key: "userId", Value: me}},
		}},
	}
}

// visible is audience plus what the user's list hides: notifications not
// valid now, broadcasts the user deleted, and notifications in state
// deleted (deleted by an administrator, or a user's own deleted one).
func visible(me string, now time.Time) bson.D {
	return bson.D{{Key: "$and", Value: bson.A{
		audience(me),
		bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "validTill", Value: nil}}, bson.D{{Key: "validTill", Value: bson.D{{Key: "$gte", Value: now}}}}}}},
		bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "invalidBefore", Value: nil}}, bson.D{{Key: "invalidBefore", Value: bson.D{{Key: "$lte", Value: now}}}}}}},
		bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "isBroadcast", Value: bson.D{{Key: "$ne", Value: true}}}}, bson.D{{Key: "deletedBy", Value: bson.D{{Key: "$ne", Value: me}}}}}}},
		bson.D{{Key: "state", Value: bson.D{{Key: "$ne", Value: notify.StateDeleted}}}},
	}}}
}

// restrict returns the query condition the caller's role adds: nothing for
// admins, visible for users; others may not read notifications.
func restrict(r *http.Request) (bson.D, error) {
	if isAdmin(r) {
		return nil, nil
	}
	me, ok := userID(r)
	if !ok {
		return nil, errForbidden
	}
	return visible(me, notify.Now()), nil
}

// userHiddenNotificationFields are never shown to users, and users cannot
// filter, sort or project on them: readBy and deletedBy name the other
// users who read or deleted a broadcast, dispatch holds the subscription
// ids and addresses a push notification went to.
var userHiddenNotificationFields = []string{"readBy", "deletedBy", "createdBy", "updatedBy", "dispatch"}

// notificationsForUsers is the query schema of users.
var notificationsForUsers = query.Notifications.Hiding(userHiddenNotificationFields...)

func notificationSchema(r *http.Request) *query.Schema {
	if isAdmin(r) {
		return query.Notifications
	}
	return notificationsForUsers
}

// shape writes a notification as the caller may see it.
func (h *notifications) shape(r *http.Request, n *notify.Notification, fields bson.D) (notify.Fields, error) {
	me, isUser := userID(r)
	if isUser && !isAdmin(r) && n.IsBroadcast && slices.Contains(n.ReadBy, me) {
		n.State = notify.StateRead
	}
	f, err := project(n, fields)
	if err != nil {
		return nil, err
	}
	if !isAdmin(r) {
		for _, k := range userHiddenNotificationFields {
			f.Delete(k)
		}
	}
	return f, nil
}

// withDispatch loads a broadcast's results for the answer.
func (h *notifications) withDispatch(r *http.Request, n *notify.Notification) error {
	return h.s.store.LoadDispatch(r.Context(), n)
}

// showsDispatch reports whether a filter's fields let dispatch through:
// reading a large broadcast's results is skipped when they would be
// dropped (a client watching the state of a broadcast asks for state).
func showsDispatch(fields bson.D) bool {
	if len(fields) == 0 {
		return true
	}
	f, err := project(&notify.Notification{Dispatch: &notify.Dispatch{}}, fields)
	return err != nil || f.Has("dispatch")
}

// loadDispatch loads what a filter's fields show of a broadcast's
// results: nothing when they leave dispatch out; only dispatch.counts when
// that is all they ask of dispatch (an inclusion of "dispatch.counts"), from
// dispatch.Dispatcher.Progress without the lists, so that a console can
// poll a running broadcast's progress every second; else the lists and
// counts.
func (h *notifications) loadDispatch(r *http.Request, n *notify.Notification, fields bson.D) error {
	switch {
	case !showsDispatch(fields):
		return nil
	case countsOnly(fields):
		if n == nil || !n.IsBroadcast || n.ID.IsZero() {
			return nil
		}
		p, err := h.d.Progress(r.Context(), n.ID)
		if err != nil || !p.Found {
			return err
		}
		c := p.Counts
		n.Dispatch = &notify.Dispatch{Counts: &c}
		return nil
	}
	return h.withDispatch(r, n)
}

// listDispatchMax is the most subscribers a broadcast may have for a
// list of notifications to show its dispatch lists; a larger one shows
// dispatch.counts only (and any arrays the original stored inline), and
// its lists are GET /notifications/{id}'s. Reading a broadcast's results
// costs about 17 µs a subscriber on the embedded store, so a page of 25
// broadcasts to a million subscribers would read for minutes and answer
// hundreds of megabytes; this way it reads 25 counts (from the
// broadcasts' headers, or the queue's progress while one runs).
const listDispatchMax = 1000

// loadListDispatch is loadDispatch for a record of a list (see
// listDispatchMax).
func (h *notifications) loadListDispatch(r *http.Request, n *notify.Notification, fields bson.D) error {
	if n == nil || !n.IsBroadcast || n.ID.IsZero() || !showsDispatch(fields) || countsOnly(fields) {
		return h.loadDispatch(r, n, fields)
	}
	p, err := h.d.Progress(r.Context(), n.ID)
	if err != nil {
		return err
	}
	if !p.Found || p.Counts.Candidates <= listDispatchMax {
		return h.loadDispatch(r, n, fields)
	}
	c := p.Counts
	if n.Dispatch == nil {
		n.Dispatch = &notify.Dispatch{}
	}
	n.Dispatch.Counts = &c
	return nil
}

// countsOnly reports whether an inclusion projection asks for
// dispatch.counts and for nothing else of dispatch.
func countsOnly(fields bson.D) bool {
	found := false
	for _, e := range fields {
		top, _, _ := strings.Cut(e.Key, ".")
		if top != "dispatch" {
			continue
		}
		on := truthy(e.Value)
		if n, ok := e.Value.(int32); ok {
			on = n != 0
		}
		if e.Key != "dispatch.counts" || !on {
			return false
		}
		found = true
	}
	return found
}

func (h *notifications) count(w http.ResponseWriter, r *http.Request) {
	// A user's list too: its audience rule ($ors of indexed conditions)
	// is answered from indexes (README).
	r = scanLimited(r)
	where, err := query.ParseWhere(r.URL.Query(), notificationSchema(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	extra, err := restrict(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	n, err := h.s.store.Notifications().Count(r.Context(), andWhere(where, extra))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

// andWhere combines a client's where with the role's restriction.
func andWhere(where, extra bson.D) bson.D {
	switch {
	case len(where) == 0 && len(extra) == 0:
		return bson.D{}
	case len(where) == 0:
		return extra
	case len(extra) == 0:
		return where
	}
	return bson.D{{Key: "$and", Value: bson.A{where, extra}}}
}

func (h *notifications) list(w http.ResponseWriter, r *http.Request) {
	// A user's list too: its audience rule ($ors of indexed conditions)
	// is answered from indexes (README).
	r = scanLimited(r)
	flt, err := query.ParseFilter(r.URL.Query(), notificationSchema(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	extra, err := restrict(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := mongostore.Query{Filter: andWhere(flt.Where, extra), Sort: flt.Order, Skip: flt.Skip, Limit: flt.Limit, Projection: fetchFields(flt.Fields)}
	recs, err := h.s.store.Notifications().Find(r.Context(), q)
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, n := range recs {
		if err := h.loadListDispatch(r, n, flt.Fields); err != nil {
			writeError(w, r, err)
			return
		}
	}
	out := make([]notify.Fields, 0, len(recs))
	for _, n := range recs {
		f, err := h.shape(r, n, flt.Fields)
		if err != nil {
			writeError(w, r, err)
			return
		}
		out = append(out, f)
	}
	writeJSON(w, http.StatusOK, out)
}

// fetchFields widens an inclusion projection by what shaping needs:
// isBroadcast (whether dispatch results are looked up, and the state a
// user sees) and readBy. shape then applies the client's own projection.
func fetchFields(fields bson.D) bson.D {
	if len(fields) == 0 {
		return fields
	}
	for _, e := range fields {
		on := truthy(e.Value)
		if n, ok := e.Value.(int32); ok {
			on = n != 0
		}
		if !on && e.Key != "_id" && e.Key != "id" {
			return fields // an exclusion list keeps both
		}
	}
	return append(slices.Clone(fields), bson.E{Key: "isBroadcast", Value: 1}, bson.E{Key: "readBy", Value: 1})
}

func (h *notifications) get(w http.ResponseWriter, r *http.Request) {
	flt, err := query.ParseFilter(r.URL.Query(), notificationSchema(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := notify.ParseID(r.PathValue("id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	extra, err := restrict(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	n, err := h.s.store.Notifications().FindOne(r.Context(), mongostore.Query{
		Filter:     andWhere(bson.D{{Key: "_id", Value: id}}, extra),
		Projection: fetchFields(flt.Fields),
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := h.loadDispatch(r, n, flt.Fields); err != nil {
		writeError(w, r, err)
		return
	}
	f, err := h.shape(r, n, flt.Fields)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// decode reads a notification written by an administrator and checks it.
func (h *notifications) decode(r *http.Request, f notify.Fields) (*notify.Notification, *notify.Subscription, error) {
	n := &notify.Notification{}
	if err := n.SetFields(f); err != nil {
		return nil, nil, err
	}
	if err := validNotification(n); err != nil {
		return nil, nil, err
	}
	n.ApplyDefaults()
	sub, err := h.d.Check(r.Context(), n)
	if errors.Is(err, dispatch.ErrInvalidUser) {
		return nil, nil, httpError(http.StatusForbidden, "invalid user")
	}
	if err != nil {
		return nil, nil, err
	}
	return n, sub, nil
}

// validNotification checks the fields every written notification needs.
func validNotification(n *notify.Notification) error {
	if n.ServiceName == "" {
		return httpError(http.StatusBadRequest, "serviceName is required")
	}
	// The original's own console offers "in-app" in its notification
	// editor, which the original stores as a channel no user ever reads;
	// here it is the in-app channel it means.
	if n.Channel == "in-app" {
		n.Channel = notify.ChannelInApp
	}
	switch n.Channel {
	case "", notify.ChannelInApp, notify.ChannelEmail, notify.ChannelSMS:
	default:
		return httpError(http.StatusBadRequest, "channel must be inApp, email or sms")
	}
	return nil
}

func (h *notifications) dispatchRequest(r *http.Request) dispatch.Request {
	who := caller(r)
	return dispatch.Request{Host: h.s.linkHost(r), User: &who}
}

func (h *notifications) create(w http.ResponseWriter, r *http.Request) {
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, k := range []string{"id", "_id", "created", "updated"} {
		f.Delete(k)
	}
	stamp(r, &f, true)
	n, sub, err := h.decode(r, f)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := h.s.store.Notifications().Insert(r.Context(), n); err != nil {
		writeError(w, r, err)
		return
	}
	out, err := h.d.Dispatch(r.Context(), n, sub, h.dispatchRequest(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := h.withDispatch(r, out); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *notifications) replace(w http.ResponseWriter, r *http.Request) {
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	cur, err := h.s.store.Notifications().FindByID(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, k := range []string{"id", "_id", "created", "createdBy", "updated"} {
		f.Delete(k)
	}
	stamp(r, &f, false)
	n, sub, err := h.decode(r, f)
	if err != nil {
		writeError(w, r, err)
		return
	}
	n.ID, n.Created, n.CreatedBy = cur.ID, cur.Created, cur.CreatedBy
	if err := h.s.store.Notifications().Replace(r.Context(), n); err != nil {
		writeError(w, r, err)
		return
	}
	// Replacing a notification replaces its dispatch, as in the original
	// where the lists live in the document: a body without dispatch is
	// sent afresh, one that carries it (a re-dispatch sends back what GET
	// showed) skips the subscribers already recorded.
	if !f.Has("dispatch") {
		if _, err := h.s.store.DeleteDispatch(r.Context(), n.ID); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if _, err := h.d.Dispatch(r.Context(), n, sub, h.dispatchRequest(r)); err != nil {
		writeError(w, r, err)
		return
	}
	noContent(w)
}

func (h *notifications) patch(w http.ResponseWriter, r *http.Request) {
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if !isAdmin(r) {
		state, _ := f.String("state")
		if !f.Has("state") {
			writeError(w, r, httpError(http.StatusBadRequest, "state is required"))
			return
		}
		h.mark(w, r, state)
		return
	}
	cur, err := h.s.store.Notifications().FindByID(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	merged := cur.Fields()
	for _, k := range []string{"id", "_id", "created", "createdBy", "updated"} {
		f.Delete(k)
	}
	stamp(r, &f, false)
	merged = merged.Merge(f)
	n := &notify.Notification{}
	if err := n.SetFields(merged); err != nil {
		writeError(w, r, err)
		return
	}
	if err := validNotification(n); err != nil {
		writeError(w, r, err)
		return
	}
	if f.Has(dispatch.FilterField) {
		if err := h.d.CheckFilter(n.BroadcastPushNotificationSubscriptionFilter); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if err := h.s.store.Notifications().Replace(r.Context(), n); err != nil {
		writeError(w, r, err)
		return
	}
	noContent(w)
}

func (h *notifications) delete(w http.ResponseWriter, r *http.Request) {
	if !isAdmin(r) {
		h.mark(w, r, notify.StateDeleted)
		return
	}
	who := caller(r)
	err := h.s.store.Notifications().UpdateByID(r.Context(), r.PathValue("id"),
		bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: notify.StateDeleted}, {Key: "updatedBy", Value: who.Fields()}}}})
	if err != nil {
		writeError(w, r, err)
		return
	}
	noContent(w)
}

// mark is a user's state change of an in-app notification.
func (h *notifications) mark(w http.ResponseWriter, r *http.Request, state string) {
	me, ok := userID(r)
	if !ok {
		writeError(w, r, errForbidden)
		return
	}
	switch state {
	case notify.StateNew, notify.StateRead, notify.StateDeleted:
	default:
		writeError(w, r, httpError(http.StatusBadRequest, "state must be new, read or deleted"))
		return
	}
	id, err := notify.ParseID(r.PathValue("id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	unlock := h.marks.lock(id)
	defer unlock()
	// Only a notification the user sees may be marked: a deleted one, one
	// not valid yet or any more, or a broadcast the user deleted is 404.
	n, err := h.s.store.Notifications().FindOne(r.Context(), mongostore.Query{Filter: andWhere(bson.D{{Key: "_id", Value: id}}, visible(me, notify.Now()))})
	if err != nil {
		writeError(w, r, err)
		return
	}
	who := access.Caller(r.Context())
	set := bson.D{{Key: "updatedBy", Value: who.Fields()}}
	var update bson.D
	switch {
	case !n.IsBroadcast:
		update = bson.D{{Key: "$set", Value: append(set, bson.E{Key: "state", Value: state})}}
	case state == notify.StateRead:
		update = bson.D{{Key: "$set", Value: set}, {Key: "$addToSet", Value: bson.D{{Key: "readBy", Value: me}}}}
	case state == notify.StateDeleted:
		update = bson.D{{Key: "$set", Value: set}, {Key: "$addToSet", Value: bson.D{{Key: "deletedBy", Value: me}}}}
	default:
		update = bson.D{{Key: "$set", Value: set}, {Key: "$pull", Value: bson.D{{Key: "readBy", Value: me}}}}
	}
	if err := h.s.store.Notifications().UpdateByID(r.Context(), id.Hex(), update); err != nil {
		writeError(w, r, err)
		return
	}
	noContent(w)
}

// keyedMutex locks per notification id.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[notify.ID]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	refs int
}

func (k *keyedMutex) lock(id notify.ID) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[notify.ID]*keyedLock{}
	}
	l := k.locks[id]
	if l == nil {
		l = &keyedLock{}
		k.locks[id] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, id)
		}
		k.mu.Unlock()
	}
}
