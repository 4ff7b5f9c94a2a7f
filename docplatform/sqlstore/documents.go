package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform"
)

const documentCols = `d.id, d.group_id, d.file_name, d.content_type, d.size, d.sha256, d.storage_key, d.uploaded_by, d.created_at,
	EXISTS (SELECT 1 FROM ocr_results o WHERE o.document_id = d.id)`

func scanDocument(row interface{ Scan(...any) error }) (docplatform.Document, error) {
	var d docplatform.Document
	err := row.Scan(&d.ID, &d.GroupID, &d.FileName, &d.ContentType, &d.Size, &d.SHA256, &d.StorageKey, &d.UploadedBy, timeCol{&d.CreatedAt}, &d.HasOCR)
	return d, err
}

// CreateDocument records an uploaded document in a live group; the id and
// time are made here when empty. The caller has already stored the bytes
// under StorageKey.
func (s *Store) CreateDocument(ctx context.Context, d docplatform.Document) (docplatform.Document, error) {
	const what = "create document"
	if d.FileName == "" || d.StorageKey == "" || d.Size < 0 {
		return docplatform.Document{}, invalid(what, "file name, storage key and size are required")
	}
	if d.ID == "" {
		d.ID = newID()
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = s.now()
	}
	d.CreatedAt = d.CreatedAt.UTC().Truncate(time.Microsecond)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := requireLiveGroup(ctx, tx, what, d.GroupID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO documents (id, group_id, file_name, content_type, size, sha256, storage_key, uploaded_by, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			d.ID, d.GroupID, d.FileName, d.ContentType, d.Size, d.SHA256, d.StorageKey, d.UploadedBy, s.at(d.CreatedAt))
		return dbErr(what, err)
	})
	if err != nil {
		return docplatform.Document{}, err
	}
	d.HasOCR = false
	return d, nil
}

// liveGroupOf is the condition that the group of a row aliased d or w is
// live: a soft-deleted group's resources are not found by anyone, system
// admins included. Their rows stay, for an investigation in the database
// or an undelete; the audit log about them stays readable.
func liveGroupOf(alias string) string {
	return `EXISTS (SELECT 1 FROM groups g WHERE g.id = ` + alias + `.group_id AND g.deleted_at IS NULL)`
}

// Document returns a document by id; one of a soft-deleted group is not
// found.
func (s *Store) Document(ctx context.Context, id string) (docplatform.Document, error) {
	d, err := scanDocument(s.r.QueryRowContext(ctx, `SELECT `+documentCols+` FROM documents d WHERE d.id = $1 AND `+liveGroupOf("d"), id))
	if err != nil {
		return docplatform.Document{}, dbErr("document", err)
	}
	return d, nil
}

// DeleteDocument removes a document's row with its OCR result and review
// sessions and, in the same transaction, records its storage key as an
// upload whose bytes must go (package upload): the caller removes the
// bytes and then ForgetUpload, and if it cannot, the sweeper will.
func (s *Store) DeleteDocument(ctx context.Context, id string) error {
	const what = "delete document"
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO uploads (storage_key, state, document_id, group_id, file_name, content_type, size, sha256, uploaded_by, changed_at)
			SELECT storage_key, 'discarding', id, group_id, file_name, content_type, size, sha256, uploaded_by, $2 FROM documents WHERE id = $1`, id, s.at(s.now()))
		if err != nil {
			return dbErr(what, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM documents WHERE id = $1`, id)
		return affected(what, res, err)
	})
}

// likeEscape makes s a literal LIKE pattern (escape character \).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// documentQuery builds the listing query for f. It orders by
// (created_at, id) descending and pages with a row comparison, so a
// one-group page is a range scan of the (group_id, created_at, id) index,
// however deep. Over several groups (or all of them) the planner picks
// between that index with a sort of the groups' rows and the
// (created_at, id) index filtered by group, which stops at the page when
// the groups' documents are interleaved in time. One scan per group merged
// with UNION ALL was tried and measured slower (BENCHMARKS.md): planning
// ten branches cost more than the scans saved. A system admin's listing
// (every group) keeps to live groups with a semi-join on groups; a
// narrowed one was checked live by the handler.
func (s *Store) documentQuery(f docplatform.DocumentFilter) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + itoa(len(args))
	}
	switch {
	case f.GroupID != "":
		// Narrowed to one group (ListDocuments has checked that it is one
		// of the caller's): the group index alone, no IN list beside it.
		where = append(where, "d.group_id = "+arg(f.GroupID))
	case !f.AllGroups:
		// The caller's groups come from its identity, which holds live
		// groups only: no join needed on the hot path.
		ph := placeholders(1, len(f.GroupIDs))
		for _, g := range f.GroupIDs {
			args = append(args, g)
		}
		where = append(where, "d.group_id IN ("+ph+")")
	}
	if f.AllGroups {
		where = append(where, liveGroupOf("d"))
	}
	if f.ContentType != "" {
		where = append(where, "d.content_type = "+arg(f.ContentType))
	}
	if f.NameContains != "" {
		where = append(where, "lower(d.file_name) LIKE "+arg("%"+likeEscape(strings.ToLower(f.NameContains))+"%")+` ESCAPE '\'`)
	}
	if f.CreatedAfter != nil {
		where = append(where, "d.created_at >= "+arg(s.at(*f.CreatedAfter)))
	}
	if f.CreatedBefore != nil {
		where = append(where, "d.created_at < "+arg(s.at(*f.CreatedBefore)))
	}
	if f.HasOCR != nil {
		not := "NOT "
		if *f.HasOCR {
			not = ""
		}
		where = append(where, not+"EXISTS (SELECT 1 FROM ocr_results o WHERE o.document_id = d.id)")
	}
	if f.Reviewed != nil {
		not := "NOT "
		if *f.Reviewed {
			not = ""
		}
		where = append(where, not+"EXISTS (SELECT 1 FROM review_sessions r WHERE r.document_id = d.id AND r.status = 'COMPLETED')")
	}
	if f.After != nil {
		where = append(where, "(d.created_at, d.id) < ("+arg(s.at(f.After.CreatedAt))+", "+arg(f.After.ID)+")")
	}
	q := `SELECT ` + documentCols + ` FROM documents d`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY d.created_at DESC, d.id DESC LIMIT " + arg(f.Limit)
	return q, args
}

// ListDocuments returns one page of the documents f selects, newest first.
// A caller restricted to no group, or narrowing to a group not among its
// own, gets an empty page without a query.
func (s *Store) ListDocuments(ctx context.Context, f docplatform.DocumentFilter) ([]docplatform.Document, error) {
	const what = "list documents"
	// A page is at most Limit rows: one allocation instead of the
	// append's doublings.
	out := make([]docplatform.Document, 0, min(max(f.Limit, 0), 1000))
	if !f.AllGroups && (len(f.GroupIDs) == 0 || f.GroupID != "" && !slices.Contains(f.GroupIDs, f.GroupID)) {
		return out, nil
	}
	if f.Limit <= 0 {
		return nil, invalid(what, "limit must be positive")
	}
	q, args := s.documentQuery(f)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanDocument(rows)
		if err != nil {
			return nil, dbErr(what, err)
		}
		out = append(out, d)
	}
	return out, dbErr(what, rows.Err())
}

// ExplainListDocuments returns the database's plan for the listing query
// of f, one line per row, so tests can check which index it uses.
func (s *Store) ExplainListDocuments(ctx context.Context, f docplatform.DocumentFilter) (string, error) {
	q, args := s.documentQuery(f)
	prefix := "EXPLAIN "
	if s.dialect == SQLite {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := s.r.QueryContext(ctx, prefix+q, args...)
	if err != nil {
		return "", dbErr("explain", err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		for _, v := range vals {
			switch v := v.(type) {
			case string:
				b.WriteString(v + " ")
			case []byte:
				b.WriteString(string(v) + " ")
			}
		}
		b.WriteString("\n")
	}
	return b.String(), rows.Err()
}

// PutOCRResult writes the document's one OCR result, replacing an earlier
// one; created reports whether there was none before.
func (s *Store) PutOCRResult(ctx context.Context, r docplatform.OCRResult) (out docplatform.OCRResult, created bool, err error) {
	const what = "put OCR result"
	now := s.now()
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var existed int
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM ocr_results WHERE document_id = $1`, r.DocumentID).Scan(&existed)
		if err != nil {
			return dbErr(what, err)
		}
		created = existed == 0
		_, err = tx.ExecContext(ctx, `INSERT INTO ocr_results (document_id, engine, result, written_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
			ON CONFLICT (document_id) DO UPDATE SET engine = excluded.engine, result = excluded.result, written_by = excluded.written_by, updated_at = excluded.updated_at`,
			r.DocumentID, r.Engine, string(r.Result), r.WrittenBy, s.at(now))
		return dbErr(what, err)
	})
	if err != nil {
		return docplatform.OCRResult{}, false, err
	}
	o, err := s.OCRResult(ctx, r.DocumentID)
	return o, created, err
}

// OCRResult returns the document's OCR result.
func (s *Store) OCRResult(ctx context.Context, documentID string) (docplatform.OCRResult, error) {
	var o docplatform.OCRResult
	var result string
	err := s.r.QueryRowContext(ctx, `SELECT o.document_id, d.group_id, o.engine, o.result, o.written_by, o.created_at, o.updated_at
		FROM ocr_results o JOIN documents d ON d.id = o.document_id WHERE o.document_id = $1`, documentID).
		Scan(&o.DocumentID, &o.GroupID, &o.Engine, &result, &o.WrittenBy, timeCol{&o.CreatedAt}, timeCol{&o.UpdatedAt})
	if err != nil {
		return docplatform.OCRResult{}, dbErr("OCR result", err)
	}
	o.Result = []byte(result)
	return o, nil
}
