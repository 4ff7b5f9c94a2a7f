package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/govkit/govkit/docplatform"
)

// The rows of package upload's life. Every change of an upload's state is
// one statement or one transaction conditioned on the state it leaves, so
// two processes moving the same upload (its replica and a sweeper, or two
// sweepers) cannot both win: the loser sees no row change and asks what
// became of the upload instead.

const uploadCols = `document_id, group_id, file_name, content_type, size, sha256, storage_key, uploaded_by, state, changed_at`

func scanUpload(row interface{ Scan(...any) error }) (docplatform.UploadRecord, error) {
	var u docplatform.UploadRecord
	var state string
	d := &u.Document
	err := row.Scan(&d.ID, &d.GroupID, &d.FileName, &d.ContentType, &d.Size, &d.SHA256, &d.StorageKey, &d.UploadedBy, &state, timeCol{&u.Since})
	u.Discarding = state == "discarding"
	return u, err
}

// RecordUpload records d, whose bytes are staged under d.StorageKey, as
// an upload waiting for its object to be completed ("stored"): it is not
// listed until CommitUpload. The group must be live; the id is made here
// when empty.
func (s *Store) RecordUpload(ctx context.Context, d docplatform.Document) (docplatform.Document, error) {
	const what = "record upload"
	if d.FileName == "" || d.StorageKey == "" || d.Size < 0 {
		return docplatform.Document{}, invalid(what, "file name, storage key and size are required")
	}
	if d.ID == "" {
		d.ID = newID()
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := requireLiveGroup(ctx, tx, what, d.GroupID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO uploads (storage_key, state, document_id, group_id, file_name, content_type, size, sha256, uploaded_by, changed_at)
			VALUES ($1, 'stored', $2, $3, $4, $5, $6, $7, $8, $9)`,
			d.StorageKey, d.ID, d.GroupID, d.FileName, d.ContentType, d.Size, d.SHA256, d.UploadedBy, s.at(s.now()))
		return dbErr(what, err)
	})
	if err != nil {
		return docplatform.Document{}, err
	}
	return d, nil
}

// CommitUpload makes the stored upload under key a listed document, in
// one transaction that moves its row from uploads to documents; the
// document's time is now. If another process committed it first, that
// document is returned. ErrConflict: the upload is being discarded (or
// is gone); ErrNotFound: its group was deleted meanwhile (nothing
// changes).
func (s *Store) CommitUpload(ctx context.Context, key string) (docplatform.Document, error) {
	const what = "commit upload"
	var d docplatform.Document
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		u, err := scanUpload(tx.QueryRowContext(ctx, `DELETE FROM uploads WHERE storage_key = $1 AND state = 'stored' RETURNING `+uploadCols, key))
		if errors.Is(err, sql.ErrNoRows) {
			d, err = scanDocument(tx.QueryRowContext(ctx, `SELECT `+documentCols+` FROM documents d WHERE d.storage_key = $1`, key))
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%s: %w: the upload was discarded", what, docplatform.ErrConflict)
			}
			return dbErr(what, err)
		}
		if err != nil {
			return dbErr(what, err)
		}
		if err := requireLiveGroup(ctx, tx, what, u.Document.GroupID); err != nil {
			return err
		}
		d = u.Document
		d.CreatedAt = s.now()
		_, err = tx.ExecContext(ctx, `INSERT INTO documents (id, group_id, file_name, content_type, size, sha256, storage_key, uploaded_by, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			d.ID, d.GroupID, d.FileName, d.ContentType, d.Size, d.SHA256, d.StorageKey, d.UploadedBy, s.at(d.CreatedAt))
		return dbErr(what, err)
	})
	if err != nil {
		return docplatform.Document{}, err
	}
	return d, nil
}

// DiscardUpload marks the stored upload under key as discarding: its
// bytes must go. committed reports that it is a listed document instead
// (another process committed it first), whose bytes must stay. An upload
// already discarding, or with no row at all, is not committed.
func (s *Store) DiscardUpload(ctx context.Context, key string) (committed bool, err error) {
	const what = "discard upload"
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE uploads SET state = 'discarding', changed_at = $2 WHERE storage_key = $1 AND state = 'stored'`, key, s.at(s.now())); err != nil {
			return dbErr(what, err)
		}
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM documents WHERE storage_key = $1`, key).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		committed = err == nil
		return dbErr(what, err)
	})
	return committed, err
}

// ForgetUpload removes the row of a discarded upload once its bytes are
// gone.
func (s *Store) ForgetUpload(ctx context.Context, key string) error {
	_, err := s.w.ExecContext(ctx, `DELETE FROM uploads WHERE storage_key = $1 AND state = 'discarding'`, key)
	return dbErr("forget upload", err)
}

// ClaimUpload makes the caller the one process taking over the upload
// under key that StaleUploads showed it as changed at since: its time is
// set to now, so that every other process that saw it at since (and any
// sweep looking for uploads older than a moment ago) leaves it alone.
// claimed is false when it changed, or went, meanwhile.
func (s *Store) ClaimUpload(ctx context.Context, key string, since time.Time) (claimed bool, err error) {
	res, err := s.w.ExecContext(ctx, `UPDATE uploads SET changed_at = $3 WHERE storage_key = $1 AND changed_at = $2`, key, s.at(since), s.at(s.now()))
	if err != nil {
		return false, dbErr("claim upload", err)
	}
	n, err := res.RowsAffected()
	return n == 1, dbErr("claim upload", err)
}

// StaleUploads returns up to limit uploads that entered their state
// before t, oldest first.
func (s *Store) StaleUploads(ctx context.Context, before time.Time, limit int) ([]docplatform.UploadRecord, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+uploadCols+` FROM uploads WHERE changed_at < $1 ORDER BY changed_at LIMIT $2`, s.at(before), limit)
	if err != nil {
		return nil, dbErr("stale uploads", err)
	}
	defer rows.Close()
	var out []docplatform.UploadRecord
	for rows.Next() {
		u, err := scanUpload(rows)
		if err != nil {
			return nil, dbErr("stale uploads", err)
		}
		out = append(out, u)
	}
	return out, dbErr("stale uploads", rows.Err())
}

// KnownKeys returns which of keys a row names, a document's or an
// upload's, in one statement (one snapshot: a key moving between the two
// tables is seen in one of them).
func (s *Store) KnownKeys(ctx context.Context, keys []string) (map[string]bool, error) {
	known := make(map[string]bool, len(keys))
	if len(keys) == 0 {
		return known, nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	in := placeholders(1, len(keys))
	rows, err := s.r.QueryContext(ctx, `SELECT storage_key FROM documents WHERE storage_key IN (`+in+`)
		UNION ALL SELECT storage_key FROM uploads WHERE storage_key IN (`+in+`)`, args...)
	if err != nil {
		return nil, dbErr("known keys", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, dbErr("known keys", err)
		}
		known[k] = true
	}
	return known, dbErr("known keys", rows.Err())
}
