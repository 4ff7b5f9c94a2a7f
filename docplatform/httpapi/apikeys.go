package httpapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

// APIKeyPrefix starts every key, so that a leaked key is recognisable in
// logs, repositories and secret scanners.
const APIKeyPrefix = "gk_"

// displayLen is how much of a key is stored and shown to people: the fixed
// prefix plus 8 characters of the random part.
const displayLen = len(APIKeyPrefix) + 8

// newAPIKey returns a fresh key (the prefix and 32 random bytes,
// base64url) with its display prefix and lookup hash.
func (s *Server) newAPIKey() (key, prefix string, hash []byte) {
	b := make([]byte, 32)
	rand.Read(b)
	key = APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return key, key[:displayLen], s.appendAPIKeyHash(nil, key)
}

// appendAPIKeyHash appends the key's lookup hash: HMAC-SHA-256 under a key derived
// from COOKIE_SECRET. Keys are 256 random bits, so a keyed hash is as good
// as a slow one and lets a request find its key with one indexed read;
// without the secret a stolen table cannot even be checked against guesses.
//
// The sum is appended to dst, so a request can keep it in its state.
func (k *secretKeys) appendAPIKeyHash(dst []byte, key string) []byte {
	// A keyed HMAC costs five allocations to set up (two SHA-256 states
	// and the pads); every API-key request needs one, so they are reused.
	// Reset returns a used one to its keyed initial state.
	m, _ := k.apiKeyHMACs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, k.apiKeyMAC)
	}
	m.Reset()
	// Write only reads the key's bytes: no copy of the string.
	m.Write(unsafe.Slice(unsafe.StringData(key), len(key)))
	sum := m.Sum(dst)
	k.apiKeyHMACs.Put(m)
	return sum
}

// rekeyAPIKey looks a key up by its hash under COOKIE_SECRET_PREVIOUS and,
// found, stores its hash under COOKIE_SECRET (current, which the caller
// computed), so that the key keeps working once the previous secret is
// dropped. Only while a rotation is under way; a key not found under
// either is ErrNotFound.
func (s *Server) rekeyAPIKey(ctx context.Context, raw string, current []byte) (docplatform.APIKeyGrant, error) {
	old := s.prev.appendAPIKeyHash(nil, raw)
	grant, err := s.o.Store.APIKeyGrant(ctx, old)
	if err != nil {
		return grant, err
	}
	if err := s.o.Store.RekeyAPIKey(ctx, grant.KeyID, old, bytes.Clone(current)); err != nil && !errors.Is(err, docplatform.ErrNotFound) {
		// The key still works under the previous secret; the next use
		// tries again.
		s.o.Logger.WarnContext(ctx, "API key not rehashed under the new COOKIE_SECRET", slog.String("key", grant.KeyID), slog.String("error", err.Error()))
	} else if err == nil {
		s.o.Logger.InfoContext(ctx, "API key rehashed under the new COOKIE_SECRET", slog.String("key", grant.KeyID))
	}
	return grant, nil
}

// apiKeyView is a key as the settings page sees it: never the key itself.
type apiKeyView struct {
	ID        string     `json:"id"`
	GroupID   string     `json:"groupId"`
	Prefix    string     `json:"keyPrefix"`
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	LastUsed  *time.Time `json:"lastUsed"`
}

func view(k docplatform.APIKey) *apiKeyView {
	v := &apiKeyView{ID: k.ID, GroupID: k.GroupID, Prefix: k.Prefix, CreatedBy: k.CreatedBy, CreatedAt: k.CreatedAt.UTC(), LastUsed: k.LastUsed}
	if v.LastUsed != nil {
		t := v.LastUsed.UTC()
		v.LastUsed = &t
	}
	return v
}

// groupBody is the body of POST /api/api-key and /regenerate.
type groupBody struct {
	GroupID string `json:"groupId"`
}

// readGroupBody reads {"groupId": "…"} strictly, as the original's
// validation pipe did (whitelist, forbidNonWhitelisted): an unknown field
// or anything after the object is a 400 that names the problem. The
// identity check has already found a string groupId in it.
func readGroupBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	var b groupBody
	d := json.NewDecoder(r.Body)
	d.DisallowUnknownFields()
	err := d.Decode(&b)
	if err == nil && d.More() {
		err = errors.New("data after the JSON object")
	}
	if err == nil {
		if _, e := d.Token(); e != io.EOF {
			err = errors.New("data after the JSON object")
		}
	}
	if err != nil {
		msg := "Request body must be {\"groupId\": string}"
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			msg = "property " + strings.Trim(f, `"`) + " should not exist"
		}
		httperr.Write(w, http.StatusBadRequest, msg)
		return "", false
	}
	return b.GroupID, true
}

// getAPIKey: GET /api/api-key?groupId= → {"apiKey": {…} | null}.
func (s *Server) getAPIKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.o.Store.APIKeyForGroup(r.Context(), r.URL.Query().Get("groupId"))
	if errors.Is(err, docplatform.ErrNotFound) {
		writeJSON(w, http.StatusOK, map[string]any{"apiKey": nil})
		return
	}
	if err != nil {
		s.internalError(w, r, "get API key", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"apiKey": view(k)})
}

// createAPIKey: POST /api/api-key {"groupId"} → 201 {"apiKey", "key"}; the
// full key appears in this response only. A group that has a key: 409.
func (s *Server) createAPIKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	gid, ok := readGroupBody(w, r)
	if !ok {
		return
	}
	if status := s.requireLiveGroup(ctx, w, r, gid); status != 0 {
		return
	}
	key, k, err := s.IssueAPIKey(ctx, gid, IdentityFrom(ctx).UserID)
	prefix := k.Prefix
	if errors.Is(err, docplatform.ErrConflict) {
		httperr.Write(w, http.StatusConflict, "The group already has an API key; regenerate or delete it")
		return
	}
	if errors.Is(err, docplatform.ErrNotFound) {
		httperr.Write(w, http.StatusNotFound, "Group not found")
		return
	}
	if err != nil {
		s.internalError(w, r, "create API key", err)
		return
	}
	state(r).addNote("API key " + prefix + "… created for group " + gid)
	s.audit(r, docplatform.AuditAPIKeyCreated, docplatform.OutcomeSuccess, IdentityFrom(ctx).UserID, gid, "prefix "+prefix)
	writeJSON(w, http.StatusCreated, map[string]any{"apiKey": view(k), "key": key})
}

// IssueAPIKey creates a group's API key as POST /api/api-key does and
// returns the key, which is kept nowhere (the store has its hash). The
// group must exist; one that has a key is docplatform.ErrConflict. `govkit
// dev` gives its demo group a key this way.
func (s *Server) IssueAPIKey(ctx context.Context, groupID, createdBy string) (string, docplatform.APIKey, error) {
	key, prefix, hash := s.newAPIKey()
	k, err := s.o.Store.CreateAPIKey(ctx, docplatform.APIKey{GroupID: groupID, Prefix: prefix, Hash: hash, CreatedBy: createdBy})
	if err != nil {
		return "", docplatform.APIKey{}, err
	}
	return key, k, nil
}

// regenerateAPIKey: POST /api/api-key/regenerate {"groupId"} → {"apiKey",
// "key"}. The store swaps the hash in one statement, so the old key stops
// working at once.
func (s *Server) regenerateAPIKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	gid, ok := readGroupBody(w, r)
	if !ok {
		return
	}
	key, prefix, hash := s.newAPIKey()
	k, err := s.o.Store.RegenerateAPIKey(ctx, gid, prefix, hash)
	if errors.Is(err, docplatform.ErrNotFound) {
		httperr.Write(w, http.StatusNotFound, "The group has no API key")
		return
	}
	if err != nil {
		s.internalError(w, r, "regenerate API key", err)
		return
	}
	state(r).addNote("API key of group " + gid + " regenerated as " + prefix + "…")
	s.audit(r, docplatform.AuditAPIKeyRegenerated, docplatform.OutcomeSuccess, IdentityFrom(ctx).UserID, gid, "prefix "+prefix)
	writeJSON(w, http.StatusOK, map[string]any{"apiKey": view(k), "key": key})
}

// deleteAPIKey: DELETE /api/api-key?groupId= → 204, or 404 without a key.
func (s *Server) deleteAPIKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	gid := r.URL.Query().Get("groupId")
	err := s.o.Store.DeleteAPIKey(ctx, gid)
	if errors.Is(err, docplatform.ErrNotFound) {
		httperr.Write(w, http.StatusNotFound, "The group has no API key")
		return
	}
	if err != nil {
		s.internalError(w, r, "delete API key", err)
		return
	}
	state(r).addNote("API key of group " + gid + " deleted")
	s.audit(r, docplatform.AuditAPIKeyDeleted, docplatform.OutcomeSuccess, IdentityFrom(ctx).UserID, gid, "")
	w.WriteHeader(http.StatusNoContent)
}

// requireLiveGroup answers 404 for a group that does not exist or is
// soft-deleted (a system admin passes the membership check for any id).
func (s *Server) requireLiveGroup(ctx context.Context, w http.ResponseWriter, r *http.Request, gid string) int {
	g, err := s.o.Store.Group(ctx, gid)
	if errors.Is(err, docplatform.ErrNotFound) || (err == nil && g.DeletedAt != nil) {
		httperr.Write(w, http.StatusNotFound, "Group not found")
		return http.StatusNotFound
	}
	if err != nil {
		s.internalError(w, r, "load group", err)
		return http.StatusInternalServerError
	}
	return 0
}

// useRecorder coalesces API-key last-use times in memory and writes them
// in one batch per interval, instead of one database write per request.
type useRecorder struct {
	store Store
	log   *slog.Logger

	mu      sync.Mutex
	pending map[string]time.Time

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func newUseRecorder(store Store, log *slog.Logger, every time.Duration) *useRecorder {
	u := &useRecorder{store: store, log: log, pending: map[string]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(u.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-u.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				u.flush(ctx)
				cancel()
			}
		}
	}()
	return u
}

func (u *useRecorder) touch(id string, t time.Time) {
	u.mu.Lock()
	u.pending[id] = t
	u.mu.Unlock()
}

func (u *useRecorder) flush(ctx context.Context) error {
	u.mu.Lock()
	batch := u.pending
	if len(batch) == 0 {
		u.mu.Unlock()
		return nil
	}
	u.pending = map[string]time.Time{}
	u.mu.Unlock()
	if err := u.store.RecordAPIKeyUse(ctx, batch); err != nil {
		u.log.WarnContext(ctx, "recording API key use", slog.String("error", err.Error()))
		return err
	}
	return nil
}

func (u *useRecorder) close(ctx context.Context) error {
	u.once.Do(func() { close(u.stop) })
	<-u.done
	return u.flush(ctx)
}
