package sqlstore

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform"
)

const apiKeyCols = `k.id, k.group_id, k.prefix, k.key_hash, k.created_by, k.created_at, k.last_used_at`

// apiKeyReturning is apiKeyCols for RETURNING, where SQLite refuses the
// table alias.
const apiKeyReturning = `id, group_id, prefix, key_hash, created_by, created_at, last_used_at`

func scanAPIKey(row interface{ Scan(...any) error }) (docplatform.APIKey, error) {
	var k docplatform.APIKey
	err := row.Scan(&k.ID, &k.GroupID, &k.Prefix, &k.Hash, &k.CreatedBy,
		timeCol{&k.CreatedAt}, nullTimeCol{&k.LastUsed})
	return k, err
}

func checkKey(what, prefix string, hash []byte) error {
	if len(hash) == 0 {
		return invalid(what, "hash is empty")
	}
	if strings.TrimSpace(prefix) == "" {
		return invalid(what, "prefix is empty")
	}
	return nil
}

// CreateAPIKey stores a live group's key (its HMAC and display prefix; the
// key itself never reaches the store). The id and creation time are set
// here; LastUsed starts empty. A group has at most one key: a second one is
// ErrConflict, as is a hash already in use. An unknown or soft-deleted
// group is ErrNotFound.
func (s *Store) CreateAPIKey(ctx context.Context, k docplatform.APIKey) (docplatform.APIKey, error) {
	const what = "create API key"
	if err := checkKey(what, k.Prefix, k.Hash); err != nil {
		return docplatform.APIKey{}, err
	}
	k.ID = newID()
	k.CreatedAt = s.now()
	k.LastUsed = nil
	k.Hash = append([]byte(nil), k.Hash...)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := requireLiveGroup(ctx, tx, what, k.GroupID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
			INSERT INTO api_keys (id, group_id, key_hash, prefix, created_by, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			k.ID, k.GroupID, k.Hash, k.Prefix, k.CreatedBy, s.at(k.CreatedAt))
		return dbErr(what, err)
	})
	if err != nil {
		return docplatform.APIKey{}, err
	}
	return k, nil
}

// APIKeyByHash finds the key with this HMAC — the lookup every API-key
// request makes, one indexed query. A key whose group is soft-deleted is
// ErrNotFound, exactly like a key that never existed.
func (s *Store) APIKeyByHash(ctx context.Context, hash []byte) (docplatform.APIKey, error) {
	const what = "API key by hash"
	if len(hash) == 0 {
		return docplatform.APIKey{}, notFound(what)
	}
	k, err := scanAPIKey(s.queryRow(ctx, `
		SELECT `+apiKeyCols+`
		FROM api_keys k JOIN groups g ON g.id = k.group_id
		WHERE k.key_hash = $1 AND g.deleted_at IS NULL`, hash))
	if err != nil {
		return docplatform.APIKey{}, dbErr(what, err)
	}
	return k, nil
}

// APIKeyGrant is APIKeyByHash reduced to what authorising a request
// needs — the key's id and its group, and the grant as a roles map — the
// lookup every API-key request makes: the same indexed query with two
// columns instead of seven (no times to parse, no hash or prefix to
// copy). Unknown key or soft-deleted group: ErrNotFound.
//
// On SQLite a key found is kept in the access cache, which is exact (see
// accessCache): a key regenerated, deleted or whose group was deleted
// before the call is refused by it. Unknown keys are never cached. The
// grant's Roles may be shared with other calls: read-only.
func (s *Store) APIKeyGrant(ctx context.Context, hash []byte) (docplatform.APIKeyGrant, error) {
	if len(hash) == 0 {
		return docplatform.APIKeyGrant{}, notFound("API key by hash")
	}
	if s.ac == nil {
		return s.readAPIKeyGrant(ctx, hash)
	}
	gen, err := s.ac.check()
	if err != nil {
		return s.readAPIKeyGrant(ctx, hash)
	}
	if g, ok := s.ac.grant(hash, gen); ok {
		if err := expired(ctx); err != nil {
			return docplatform.APIKeyGrant{}, dbErr("API key by hash", err)
		}
		return g, nil
	}
	g, err := s.readAPIKeyGrant(ctx, hash)
	if err == nil {
		s.ac.putGrant(hash, gen, g)
	}
	return g, err
}

// readAPIKeyGrant is APIKeyGrant from the database.
func (s *Store) readAPIKeyGrant(ctx context.Context, hash []byte) (docplatform.APIKeyGrant, error) {
	// One struct for both scan targets: they escape (Scan takes them as
	// any), and this read runs on every API-key request without a cache.
	var c struct{ keyID, groupID string }
	err := s.queryRow(ctx, `
		SELECT k.id, k.group_id
		FROM api_keys k JOIN groups g ON g.id = k.group_id
		WHERE k.key_hash = $1 AND g.deleted_at IS NULL`, hash).Scan(&c.keyID, &c.groupID)
	if err != nil {
		return docplatform.APIKeyGrant{}, dbErr("API key by hash", err)
	}
	return docplatform.APIKeyGrant{KeyID: c.keyID, GroupID: c.groupID,
		Roles: map[string]docplatform.Role{c.groupID: docplatform.RoleMember}}, nil
}

// APIKeyForGroup returns a live group's key (for the settings page, which
// shows its prefix and last use).
func (s *Store) APIKeyForGroup(ctx context.Context, groupID string) (docplatform.APIKey, error) {
	k, err := scanAPIKey(s.r.QueryRowContext(ctx, `
		SELECT `+apiKeyCols+`
		FROM api_keys k JOIN groups g ON g.id = k.group_id
		WHERE k.group_id = $1 AND g.deleted_at IS NULL`, groupID))
	if err != nil {
		return docplatform.APIKey{}, dbErr("API key for group", err)
	}
	return k, nil
}

// RegenerateAPIKey replaces a live group's key secret in place, in one
// statement: the row keeps its id and creator, the old hash stops matching
// the moment the statement commits, CreatedAt becomes now and LastUsed is
// cleared (they describe the new secret). No key for the group, or a
// soft-deleted group: ErrNotFound.
func (s *Store) RegenerateAPIKey(ctx context.Context, groupID, prefix string, hash []byte) (docplatform.APIKey, error) {
	const what = "regenerate API key"
	if err := checkKey(what, prefix, hash); err != nil {
		return docplatform.APIKey{}, err
	}
	k, err := scanAPIKey(s.w.QueryRowContext(ctx, `
		UPDATE api_keys AS k SET prefix = $2, key_hash = $3, created_at = $4, last_used_at = NULL
		WHERE k.group_id = $1
		  AND EXISTS (SELECT 1 FROM groups g WHERE g.id = k.group_id AND g.deleted_at IS NULL)
		RETURNING `+apiKeyReturning, groupID, prefix, hash, s.at(s.now())))
	if err != nil {
		return docplatform.APIKey{}, dbErr(what, err)
	}
	return k, nil
}

// RekeyAPIKey replaces key id's lookup hash from with to: the same key,
// hashed under a new COOKIE_SECRET. Nothing else of the key changes. A key
// that no longer has hash from (regenerated or deleted meanwhile, or
// rekeyed by another replica) is ErrNotFound.
func (s *Store) RekeyAPIKey(ctx context.Context, id string, from, to []byte) error {
	const what = "rekey API key"
	if len(from) == 0 || len(to) == 0 {
		return notFound(what)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE api_keys SET key_hash = $3 WHERE id = $1 AND key_hash = $2`, id, from, to)
	return affected(what, res, err)
}

// DeleteAPIKey removes a group's key, also of a soft-deleted group (so an
// operator can clean up). No key: ErrNotFound.
func (s *Store) DeleteAPIKey(ctx context.Context, groupID string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM api_keys WHERE group_id = $1`, groupID)
	return affected("delete API key", res, err)
}

// RecordAPIKeyUse writes coalesced last-use times, keyed by API key id, in
// one transaction. A time never moves backwards, and ids of keys deleted
// in the meantime are skipped without error.
func (s *Store) RecordAPIKeyUse(ctx context.Context, lastUsed map[string]time.Time) error {
	const what = "record API key use"
	if len(lastUsed) == 0 {
		return nil
	}
	// Sorted ids: PostgreSQL transactions touching the same rows lock them
	// in the same order and cannot deadlock each other.
	ids := slices.Sorted(maps.Keys(lastUsed))
	if s.dialect == Postgres {
		// One statement, one round trip, however many keys.
		times := make([]time.Time, len(ids))
		for i, id := range ids {
			times[i] = lastUsed[id].UTC().Truncate(time.Microsecond)
		}
		_, err := s.w.ExecContext(ctx, `
			UPDATE api_keys AS k SET last_used_at = v.t
			FROM unnest($1::text[], $2::timestamptz[]) AS v(id, t)
			WHERE k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at < v.t)`, ids, times)
		return dbErr(what, err)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `
			UPDATE api_keys SET last_used_at = $2
			WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, id := range ids {
			if _, err := stmt.ExecContext(ctx, id, s.at(lastUsed[id])); err != nil {
				return err
			}
		}
		return nil
	})
	return dbErr(what, err)
}
