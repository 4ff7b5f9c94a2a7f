package httpapi

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"golang.org/x/crypto/bcrypt"

	"github.com/govkit/govkit/internal/clientip"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/access"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/query"
	"github.com/govkit/govkit/notify/subscription"
)

func init() { routeGroups = append(routeGroups, (*Server).administratorRoutes) }

func (s *Server) administratorRoutes() {
	const tag = "administrator"
	s.handle(route{method: "GET", path: "/administrators/count", roles: adminsOnly, tag: tag, summary: "count administrators", params: []param{whereParam}, response: "count", h: s.countAdministrators})
	s.handle(route{method: "POST", path: "/administrators/login", roles: notAdmins, tag: tag, summary: "log in: returns an access token that lives loginTokenTtlHours at most, and its ttl in seconds", body: "Login", response: "Token", h: s.login})
	s.handle(route{method: "POST", path: "/administrators/logout", tag: tag, summary: "log out: deletes the access token the request presents (ours)", status: http.StatusNoContent, h: s.logout})
	s.handle(route{method: "GET", path: "/administrators/whoami", tag: tag, summary: "who is calling", response: "UserProfile", h: s.whoami})
	s.handle(route{method: "POST", path: "/administrators/{id}/access-tokens", roles: adminsOnly, tag: tag, summary: "create an access token", body: "NewAccessToken", response: "AccessToken", h: s.createAccessToken})
	s.handle(route{method: "PATCH", path: "/administrators/{id}/access-tokens", roles: adminsOnly, tag: tag, summary: "update access tokens selected by where", params: []param{whereParam}, body: "NewAccessToken", response: "count", h: s.patchAccessTokens})
	s.handle(route{method: "GET", path: "/administrators/{id}/access-tokens", roles: adminsOnly, tag: tag, summary: "get access tokens", params: []param{filterParam}, response: "[]AccessToken", h: s.listAccessTokens})
	s.handle(route{method: "DELETE", path: "/administrators/{id}/access-tokens", roles: adminsOnly, tag: tag, summary: "delete access tokens selected by where", params: []param{whereParam}, response: "count", h: s.deleteAccessTokens})
	s.handle(route{method: "POST", path: "/administrators/{id}/user-credential", roles: adminsOnly, tag: tag, summary: "create or replace the password", body: "Password", response: "UserCredential", h: s.setUserCredential})
	s.handle(route{method: "PUT", path: "/administrators/{id}", roles: adminsOnly, tag: tag, summary: "replace an administrator", body: "NewAdministrator", status: http.StatusNoContent, h: s.replaceAdministrator})
	s.handle(route{method: "PATCH", path: "/administrators/{id}", roles: adminsOnly, tag: tag, summary: "update an administrator", body: "NewAdministrator", status: http.StatusNoContent, h: s.patchAdministrator})
	s.handle(route{method: "GET", path: "/administrators/{id}", roles: adminsOnly, tag: tag, summary: "get an administrator", response: "Administrator", h: s.getAdministrator})
	s.handle(route{method: "DELETE", path: "/administrators/{id}", roles: adminsOnly, tag: tag, summary: "delete an administrator with its password and tokens", status: http.StatusNoContent, h: s.removeAdministrator})
	s.handle(route{method: "POST", path: "/administrators", roles: superAdminOnly, tag: tag, summary: "sign up an administrator", body: "NewAdministrator", response: "Administrator", h: s.signUp})
	s.handle(route{method: "GET", path: "/administrators", roles: adminsOnly, tag: tag, summary: "get administrators", params: []param{filterParam}, response: "[]Administrator", h: s.listAdministrators})
}

// errNotOwnRecord: an administrator who signed in with an access token may
// only manage its own record (an OIDC or IP administrator manages all).
func ownRecordOnly(r *http.Request, id string) error {
	p := caller(r)
	if p.AuthnStrategy == notify.AuthnAccessToken && p.SecurityID != id {
		return errForbidden
	}
	return nil
}

// ownFilter restricts list and count of a token administrator to itself.
func ownFilter(r *http.Request) bson.D {
	p := caller(r)
	if p.AuthnStrategy != notify.AuthnAccessToken {
		return nil
	}
	id, err := notify.ParseID(p.SecurityID)
	if err != nil {
		return bson.D{{Key: "_id", Value: nil}}
	}
	return bson.D{{Key: "_id", Value: id}}
}

// errPasswordPattern is worded exactly as the original's (clients such as
// its web console show the message); the pattern itself is in the OpenAPI
// document's password schema.
var errPasswordPattern = httpError(http.StatusBadRequest, "must match pattern")

func hashPassword(pw string) (string, error) {
	if !notify.CheckPasswordComplexity(pw) {
		return "", errPasswordPattern
	}
	// bcrypt reads at most 72 bytes; longer passwords would be silently
	// truncated, so refuse them.
	if len(pw) > 72 {
		return "", httpError(http.StatusBadRequest, "password must be at most 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	if err != nil {
		return "", err
	}
	return string(h), nil
}

// putCredential creates or replaces the administrator's password record.
func putCredential(ctx context.Context, st *mongostore.Store, who notify.UserProfile, adminID notify.ID, hash string) (*notify.UserCredential, error) {
	coll := st.UserCredentials()
	cur, err := coll.FindOne(ctx, mongostore.Query{Filter: bson.D{{Key: "userId", Value: adminID}}})
	p := who
	switch {
	case err == nil:
		cur.Password = hash
		cur.UpdatedBy = &p
		return cur, coll.Replace(ctx, cur)
	case errors.Is(err, notify.ErrNotFound):
		c := &notify.UserCredential{Password: hash, UserID: adminID}
		c.CreatedBy, c.UpdatedBy = &p, &p
		return c, coll.Insert(ctx, c)
	}
	return nil, err
}

// changePassword sets an administrator's password and revokes its access
// tokens — those issued with the old password, and any minted by whoever
// knew it — except keep ("" for none): the API keeps the token of an
// administrator changing its own password, which stays signed in where it
// did so. Tokens go first, so a half-finished change leaves none behind;
// callers run it in a transaction (Store.WithTransaction) where the store
// has them. It returns the credential and how many tokens were revoked.
// The API's PATCH, PUT and user-credential routes and `govkit notify
// admin set-password` change passwords so.
func changePassword(ctx context.Context, st *mongostore.Store, who notify.UserProfile, adminID notify.ID, hash, keep string) (*notify.UserCredential, int64, error) {
	f := bson.D{{Key: "userId", Value: adminID}}
	if keep != "" {
		f = append(f, bson.E{Key: "_id", Value: bson.D{{Key: "$ne", Value: keep}}})
	}
	revoked, err := st.AccessTokens().DeleteMany(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	c, err := putCredential(ctx, st, who, adminID, hash)
	return c, revoked, err
}

// ownToken is the access token of a request made by administrator id
// with one ("" otherwise).
func ownToken(r *http.Request, id notify.ID) string {
	if p := caller(r); p.AuthnStrategy == notify.AuthnAccessToken && p.SecurityID == id.Hex() {
		return access.AccessTokenOf(r)
	}
	return ""
}

// credentialOut leaves out the password hash, which the original returns.
func credentialOut(c *notify.UserCredential) notify.Fields {
	f, _ := toFields(c)
	f.Delete("password")
	return f
}

func adminFromBody(f notify.Fields) (*notify.Administrator, string, error) {
	pw, hasPW := f.Get("password")
	f.Delete("password")
	for _, k := range []string{"id", "_id", "created", "updated", "createdBy", "updatedBy"} {
		f.Delete(k)
	}
	a := &notify.Administrator{}
	if err := a.SetFields(f); err != nil {
		return nil, "", err
	}
	password := ""
	if hasPW {
		s, ok := pw.(string)
		if !ok {
			return nil, "", &notify.FieldError{Field: "password", Rule: "must be a string"}
		}
		password = s
	}
	return a, password, nil
}

// emailTaken refuses an email another administrator has, ignoring case.
// The unique index decides races; this check gives the same 400 on stores
// that report the index violation less clearly.
func emailTaken(ctx context.Context, st *mongostore.Store, email string, self notify.ID) error {
	a, err := st.FindAdministratorByEmail(ctx, email)
	switch {
	case errors.Is(err, notify.ErrNotFound):
		return nil
	case err != nil:
		return err
	case a.ID != self:
		return fmt.Errorf("administrator email %q: %w", email, notify.ErrDuplicate)
	}
	return nil
}

func validEmail(e string) error {
	if e == "" {
		return &notify.FieldError{Field: "email", Rule: "is required"}
	}
	if !strings.Contains(e, "@") || strings.ContainsAny(e, " \t\r\n") {
		return &notify.FieldError{Field: "email", Rule: "must be an email address"}
	}
	return nil
}

// createAdministrator adds administrator a with the password hash,
// refusing an email another administrator has (ignoring case): the API's
// sign-up and `govkit notify admin add`.
func createAdministrator(ctx context.Context, st *mongostore.Store, who notify.UserProfile, a *notify.Administrator, hash string) error {
	if err := emailTaken(ctx, st, a.Email, notify.ID{}); err != nil {
		return err
	}
	a.CreatedBy, a.UpdatedBy = &who, nil // createdBy only, as the original's create
	return st.WithTransaction(ctx, func(ctx context.Context) error {
		if err := st.Administrators().Insert(ctx, a); err != nil {
			return err
		}
		if _, err := putCredential(ctx, st, who, a.ID, hash); err != nil {
			if !st.SupportsTransactions() {
				_ = st.Administrators().DeleteByID(context.WithoutCancel(ctx), a.ID.Hex())
			}
			return err
		}
		return nil
	})
}

func (s *Server) signUp(w http.ResponseWriter, r *http.Request) {
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	a, pw, err := adminFromBody(f)
	if err == nil {
		err = validEmail(a.Email)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	hash, err := hashPassword(pw)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := createAdministrator(r.Context(), s.store, caller(r), a, hash); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) listAdministrators(w http.ResponseWriter, r *http.Request) {
	flt, err := query.ParseFilter(r.URL.Query(), query.Administrators)
	if err != nil {
		writeError(w, r, err)
		return
	}
	recs, err := s.store.Administrators().Find(r.Context(), findQuery(flt, ownFilter(r)))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeRecords(w, r, recs, flt.Fields, nil)
}

func (s *Server) countAdministrators(w http.ResponseWriter, r *http.Request) {
	where, err := query.ParseWhere(r.URL.Query(), query.Administrators)
	if err != nil {
		writeError(w, r, err)
		return
	}
	n, err := s.store.Administrators().Count(r.Context(), subscription.And(where, ownFilter(r)))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

func (s *Server) getAdministrator(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := ownRecordOnly(r, id); err != nil {
		writeError(w, r, err)
		return
	}
	a, err := s.store.Administrators().FindByID(r.Context(), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// updateAdministrator is PATCH (merge) and PUT (replace): a password in
// the body sets the credential too.
func (s *Server) updateAdministrator(w http.ResponseWriter, r *http.Request, replace bool) {
	id := r.PathValue("id")
	if err := ownRecordOnly(r, id); err != nil {
		writeError(w, r, err)
		return
	}
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	cur, err := s.store.Administrators().FindByID(r.Context(), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	patch, pw, err := adminFromBody(f.Clone())
	if err != nil {
		writeError(w, r, err)
		return
	}
	next := *cur
	if replace {
		next.Email, next.Username = patch.Email, patch.Username
	} else {
		if f.Has("email") {
			next.Email = patch.Email
		}
		if f.Has("username") {
			next.Username = patch.Username
		}
	}
	if err := validEmail(next.Email); err != nil {
		writeError(w, r, err)
		return
	}
	if err := emailTaken(r.Context(), s.store, next.Email, cur.ID); err != nil {
		writeError(w, r, err)
		return
	}
	hash := ""
	if pw != "" {
		if hash, err = hashPassword(pw); err != nil {
			writeError(w, r, err)
			return
		}
	}
	who := caller(r)
	next.UpdatedBy = &who
	err = s.store.WithTransaction(r.Context(), func(ctx context.Context) error {
		if err := s.store.Administrators().Replace(ctx, &next); err != nil {
			return err
		}
		if hash != "" {
			_, _, err := changePassword(ctx, s.store, who, cur.ID, hash, ownToken(r, cur.ID))
			return err
		}
		return nil
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	noContent(w)
}

func (s *Server) patchAdministrator(w http.ResponseWriter, r *http.Request) {
	s.updateAdministrator(w, r, false)
}

func (s *Server) replaceAdministrator(w http.ResponseWriter, r *http.Request) {
	s.updateAdministrator(w, r, true)
}

func (s *Server) removeAdministrator(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := ownRecordOnly(r, id); err != nil {
		writeError(w, r, err)
		return
	}
	oid, err := notify.ParseID(id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if _, err := s.store.Administrators().FindByID(r.Context(), id); err != nil {
		writeError(w, r, err)
		return
	}
	if err := deleteAdministrator(r.Context(), s.store, oid); err != nil {
		writeError(w, r, err)
		return
	}
	noContent(w)
}

// deleteAdministrator removes an administrator with its password and
// tokens: the API's DELETE and `govkit notify admin remove`.
func deleteAdministrator(ctx context.Context, st *mongostore.Store, id notify.ID) error {
	return st.WithTransaction(ctx, func(ctx context.Context) error {
		// tokens first: a half-finished delete must not leave a usable
		// token behind
		if _, err := st.AccessTokens().DeleteMany(ctx, bson.D{{Key: "userId", Value: id}}); err != nil {
			return err
		}
		if _, err := st.UserCredentials().DeleteMany(ctx, bson.D{{Key: "userId", Value: id}}); err != nil {
			return err
		}
		return st.Administrators().DeleteByID(ctx, id.Hex())
	})
}

func (s *Server) setUserCredential(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := ownRecordOnly(r, id); err != nil {
		writeError(w, r, err)
		return
	}
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pw, _ := f.String("password")
	hash, err := hashPassword(pw)
	if err != nil {
		writeError(w, r, err)
		return
	}
	a, err := s.store.Administrators().FindByID(r.Context(), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var c *notify.UserCredential
	err = s.store.WithTransaction(r.Context(), func(ctx context.Context) error {
		c, _, err = changePassword(ctx, s.store, caller(r), a.ID, hash, ownToken(r, a.ID))
		return err
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, credentialOut(c))
}

const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomAlnum returns n random alphanumeric characters; access token ids
// are 64 of them, as the original's.
func randomAlnum(n int) string {
	b := make([]byte, n)
	buf := make([]byte, 1)
	for i := 0; i < n; {
		if _, err := rand.Read(buf); err != nil {
			panic(err)
		}
		// reject values that would bias the distribution
		if int(buf[0]) >= 256-256%len(tokenAlphabet) {
			continue
		}
		b[i] = tokenAlphabet[int(buf[0])%len(tokenAlphabet)]
		i++
	}
	return string(b)
}

// tokenOptions reads {ttl, name} (login also uses tokenName).
func tokenOptions(f notify.Fields, nameKey string) (ttl *int64, name string, err error) {
	if v, ok := f.Get("ttl"); ok && v != nil {
		t := &notify.AccessToken{}
		if err := t.SetFields(notify.Fields{{Key: "ttl", Value: v}}); err != nil || t.TTL == nil || *t.TTL < 0 {
			return nil, "", &notify.FieldError{Field: "ttl", Rule: "must be a non-negative whole number of seconds"}
		}
		ttl = t.TTL
	}
	if v, ok := f.Get(nameKey); ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return nil, "", &notify.FieldError{Field: nameKey, Rule: "must be a string"}
		}
		name = s
	}
	return ttl, name, nil
}

func (s *Server) issueToken(ctx context.Context, who notify.UserProfile, adminID notify.ID, ttl *int64, name string) (*notify.AccessToken, error) {
	p := who
	t := &notify.AccessToken{ID: randomAlnum(64), TTL: ttl, Name: name, UserID: adminID, CreatedBy: &p}
	if err := s.store.AccessTokens().Insert(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

var errBadLogin = httpError(http.StatusUnauthorized, "Invalid email or password.")

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	email, _ := f.String("email")
	pw, _ := f.String("password")
	if email == "" || pw == "" {
		writeError(w, r, &notify.FieldError{Field: "email and password", Rule: "are required"})
		return
	}
	ttl, name, err := tokenOptions(f, "tokenName")
	if err != nil {
		writeError(w, r, err)
		return
	}
	client := "notify:login:client:" + limitKey(s.ident.ClientIP(r))
	if blocked, wait, err := s.logins.Blocked(r.Context(), client); err != nil {
		s.log.Error("notify: log-in failure counters unavailable", "err", err)
	} else if blocked {
		writeError(w, r, &tooManyLogins{wait})
		return
	}
	failed := func() {
		if err := s.logins.Fail(r.Context(), client); err != nil {
			s.log.Error("notify: log-in failure counters unavailable", "err", err)
		}
		writeError(w, r, errBadLogin)
	}
	a, err := s.store.FindAdministratorByEmail(r.Context(), email)
	if errors.Is(err, notify.ErrNotFound) {
		// spend the same work as a real comparison, so that timing does not
		// tell which addresses are administrators
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(pw))
		failed()
		return
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	cred, err := s.store.UserCredentials().FindOne(r.Context(), mongostore.Query{Filter: bson.D{{Key: "userId", Value: a.ID}}})
	if err != nil {
		if errors.Is(err, notify.ErrNotFound) {
			failed()
			return
		}
		writeError(w, r, err)
		return
	}
	if bcrypt.CompareHashAndPassword([]byte(cred.Password), []byte(pw)) != nil {
		failed()
		return
	}
	// A log-in token lives loginTokenTtlHours at most; a shorter ttl
	// asked for is kept (NotifyBC's never expired without one).
	limit := int64(s.cfg.Guard.LoginTokenTTL / time.Second)
	if ttl == nil || *ttl > limit {
		ttl = &limit
	}
	t, err := s.issueToken(r.Context(), caller(r), a.ID, ttl, name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"token": t.ID, "ttl": *ttl})
}

// logout deletes the access token the request presents, whatever it is
// (an expired one too, which identifies nobody), so that signing out of
// the console ends the token and not only the tab's copy of it. 204 in
// every case: there is nothing to learn from it.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if tok := access.AccessTokenOf(r); tok != "" && len(tok) <= 256 {
		if err := s.store.AccessTokens().DeleteByID(r.Context(), tok); err != nil && !errors.Is(err, notify.ErrNotFound) {
			writeError(w, r, err)
			return
		}
	}
	noContent(w)
}

// limitKey counts a client address as the wrong-code budgets do (an IPv6
// client by its /64).
func limitKey(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil {
		return clientip.LimitKey(a, subscription.IPv6LimitPrefix)
	}
	return ip
}

// tooManyLogins is 429 once a client's failed log-ins are spent.
type tooManyLogins struct{ wait time.Duration }

func (e *tooManyLogins) Error() string {
	return fmt.Sprintf("too many failed log-ins; try again in %d seconds", max(1, int(math.Ceil(e.wait.Seconds()))))
}
func (e *tooManyLogins) StatusCode() int           { return http.StatusTooManyRequests }
func (e *tooManyLogins) RetryAfter() time.Duration { return e.wait }

var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("not a password of anyone"), bcrypt.DefaultCost)

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, caller(r))
}

// tokenOwner checks the own-record rule and that the administrator exists.
func (s *Server) tokenOwner(r *http.Request) (notify.ID, error) {
	id := r.PathValue("id")
	if err := ownRecordOnly(r, id); err != nil {
		return notify.ID{}, err
	}
	a, err := s.store.Administrators().FindByID(r.Context(), id)
	if err != nil {
		return notify.ID{}, err
	}
	return a.ID, nil
}

func (s *Server) createAccessToken(w http.ResponseWriter, r *http.Request) {
	owner, err := s.tokenOwner(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ttl, name, err := tokenOptions(f, "name")
	if err != nil {
		writeError(w, r, err)
		return
	}
	t, err := s.issueToken(r.Context(), caller(r), owner, ttl, name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) listAccessTokens(w http.ResponseWriter, r *http.Request) {
	owner, err := s.tokenOwner(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	flt, err := query.ParseFilter(r.URL.Query(), query.AccessTokens)
	if err != nil {
		writeError(w, r, err)
		return
	}
	recs, err := s.store.AccessTokens().Find(r.Context(), findQuery(flt, bson.D{{Key: "userId", Value: owner}}))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeRecords(w, r, recs, flt.Fields, nil)
}

func (s *Server) patchAccessTokens(w http.ResponseWriter, r *http.Request) {
	owner, err := s.tokenOwner(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	f, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if f.Has("userId") {
		writeError(w, r, httpError(http.StatusForbidden, "Updating userId is not allowed."))
		return
	}
	where, err := query.ParseWhere(r.URL.Query(), query.AccessTokens)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ttl, name, err := tokenOptions(f, "name")
	if err != nil {
		writeError(w, r, err)
		return
	}
	set := bson.D{{Key: "updatedBy", Value: caller(r).Fields()}}
	if f.Has("ttl") {
		if ttl == nil {
			set = append(set, bson.E{Key: "ttl", Value: nil})
		} else {
			set = append(set, bson.E{Key: "ttl", Value: *ttl})
		}
	}
	if f.Has("name") {
		set = append(set, bson.E{Key: "name", Value: name})
	}
	n, err := s.store.AccessTokens().UpdateMany(r.Context(), subscription.And(where, bson.D{{Key: "userId", Value: owner}}), bson.D{{Key: "$set", Value: set}})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

func (s *Server) deleteAccessTokens(w http.ResponseWriter, r *http.Request) {
	owner, err := s.tokenOwner(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	where, err := query.ParseWhere(r.URL.Query(), query.AccessTokens)
	if err != nil {
		writeError(w, r, err)
		return
	}
	n, err := s.store.AccessTokens().DeleteMany(r.Context(), subscription.And(where, bson.D{{Key: "userId", Value: owner}}))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}
