package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/govkit/govkit/docplatform"
)

// memStore is an in-test Store with the semantics the SQL store promises:
// the admin flag survives upserts, soft-deleted groups grant nothing and
// their API key stops working, one key per group.
type memStore struct {
	mu      sync.Mutex
	users   map[string]docplatform.User
	groups  map[string]docplatform.Group
	members map[[2]string]docplatform.Role // user, group
	keys    map[string]docplatform.APIKey  // by group
	used    map[string]time.Time
	nextID  int
	pingErr error
}

func newMemStore() *memStore {
	return &memStore{users: map[string]docplatform.User{}, groups: map[string]docplatform.Group{}, members: map[[2]string]docplatform.Role{}, keys: map[string]docplatform.APIKey{}, used: map[string]time.Time{}}
}

func (m *memStore) id(prefix string) string {
	m.nextID++
	return prefix + string(rune('a'+m.nextID%26)) + time.Now().Format("150405.000000000")
}

func (m *memStore) Ping(context.Context) error { return m.pingErr }

func (m *memStore) UpsertUser(_ context.Context, u docplatform.User) (docplatform.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.users[u.ID]; ok {
		u.IsSystemAdmin = old.IsSystemAdmin
		u.CreatedAt = old.CreatedAt
	} else {
		u.IsSystemAdmin = false
		u.CreatedAt = time.Now()
	}
	u.UpdatedAt = time.Now()
	m.users[u.ID] = u
	return u, nil
}

func (m *memStore) User(_ context.Context, id string) (docplatform.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return u, docplatform.ErrNotFound
	}
	return u, nil
}

func (m *memStore) setAdmin(id string, admin bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.users[id]
	u.ID = id
	u.IsSystemAdmin = admin
	m.users[id] = u
}

func (m *memStore) UserAccess(_ context.Context, userID string) (bool, map[string]docplatform.Role, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	roles := map[string]docplatform.Role{}
	for k, r := range m.members {
		if k[0] == userID && m.groups[k[1]].DeletedAt == nil {
			roles[k[1]] = r
		}
	}
	return m.users[userID].IsSystemAdmin, roles, nil
}

func (m *memStore) createGroup(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.id("g-")
	m.groups[id] = docplatform.Group{ID: id, Name: name, CreatedAt: time.Now()}
	return id
}

func (m *memStore) softDelete(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[id]
	now := time.Now()
	g.DeletedAt = &now
	m.groups[id] = g
}

func (m *memStore) setMember(user, group string, role docplatform.Role) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.members[[2]string{user, group}] = role
}

func (m *memStore) Group(_ context.Context, id string) (docplatform.Group, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[id]
	if !ok {
		return g, docplatform.ErrNotFound
	}
	return g, nil
}

func (m *memStore) ListGroups(context.Context) ([]docplatform.Group, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []docplatform.Group
	for _, g := range m.groups {
		if g.DeletedAt == nil {
			out = append(out, g)
		}
	}
	return out, nil
}

func (m *memStore) CreateAPIKey(_ context.Context, k docplatform.APIKey) (docplatform.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[k.GroupID]; ok {
		return k, docplatform.ErrConflict
	}
	k.ID = m.id("k-")
	k.CreatedAt = time.Now()
	m.keys[k.GroupID] = k
	return k, nil
}

func (m *memStore) APIKeyByHash(_ context.Context, hash []byte) (docplatform.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.keys {
		if bytes.Equal(k.Hash, hash) {
			if m.groups[k.GroupID].DeletedAt != nil {
				return docplatform.APIKey{}, docplatform.ErrNotFound
			}
			return k, nil
		}
	}
	return docplatform.APIKey{}, docplatform.ErrNotFound
}

func (m *memStore) APIKeyForGroup(_ context.Context, groupID string) (docplatform.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[groupID]
	if !ok {
		return k, docplatform.ErrNotFound
	}
	if t, ok := m.used[k.ID]; ok {
		k.LastUsed = &t
	}
	return k, nil
}

func (m *memStore) RegenerateAPIKey(_ context.Context, groupID, prefix string, hash []byte) (docplatform.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[groupID]
	if !ok {
		return k, docplatform.ErrNotFound
	}
	k.Prefix, k.Hash = prefix, hash
	m.keys[groupID] = k
	return k, nil
}

func (m *memStore) DeleteAPIKey(_ context.Context, groupID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[groupID]; !ok {
		return docplatform.ErrNotFound
	}
	delete(m.keys, groupID)
	return nil
}

func (m *memStore) RecordAPIKeyUse(_ context.Context, used map[string]time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, t := range used {
		m.used[id] = t
	}
	return nil
}

var errDown = errors.New("database down")
