package sqlstore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/govkit/govkit/docplatform"
)

const workflowCols = `w.id, w.group_id, w.name, w.description, w.latest_version, w.created_by, w.created_at, w.updated_at`

const (
	listWorkflowsOrder = ` ORDER BY lower(w.name), w.id`
	// listWorkflowsOne is ListWorkflows' text for one group, the same as
	// the general form with one placeholder.
	listWorkflowsOne = `SELECT ` + workflowCols + ` FROM workflows w WHERE w.group_id IN ($1)` + listWorkflowsOrder
)

func scanWorkflow(row interface{ Scan(...any) error }) (docplatform.Workflow, error) {
	var w docplatform.Workflow
	err := row.Scan(&w.ID, &w.GroupID, &w.Name, &w.Description, &w.Latest, &w.CreatedBy, timeCol{&w.CreatedAt}, timeCol{&w.UpdatedAt})
	return w, err
}

// CreateWorkflow makes a workflow in a live group with config as its
// version 1. Names are unique within a group, ignoring case (ErrConflict).
func (s *Store) CreateWorkflow(ctx context.Context, w docplatform.Workflow, config []byte) (docplatform.Workflow, docplatform.WorkflowVersion, error) {
	const what = "create workflow"
	w.Name = strings.TrimSpace(w.Name)
	if w.Name == "" {
		return w, docplatform.WorkflowVersion{}, invalid(what, "name is empty")
	}
	now := s.now()
	w.ID, w.Latest, w.CreatedAt, w.UpdatedAt = newID(), 1, now, now
	v := docplatform.WorkflowVersion{WorkflowID: w.ID, Version: 1, Config: config, CreatedBy: w.CreatedBy, CreatedAt: now}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := requireLiveGroup(ctx, tx, what, w.GroupID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO workflows (id, group_id, name, description, latest_version, created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, 1, $5, $6, $6)`,
			w.ID, w.GroupID, w.Name, w.Description, w.CreatedBy, s.at(now)); err != nil {
			return dbErr(what, err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO workflow_versions (workflow_id, version, config, created_by, created_at) VALUES ($1, 1, $2, $3, $4)`,
			w.ID, string(config), w.CreatedBy, s.at(now))
		return dbErr(what, err)
	})
	if err != nil {
		return docplatform.Workflow{}, docplatform.WorkflowVersion{}, err
	}
	return w, v, nil
}

// Workflow returns a workflow by id; one of a soft-deleted group is not
// found.
func (s *Store) Workflow(ctx context.Context, id string) (docplatform.Workflow, error) {
	w, err := scanWorkflow(s.r.QueryRowContext(ctx, `SELECT `+workflowCols+` FROM workflows w WHERE w.id = $1 AND `+liveGroupOf("w"), id))
	if err != nil {
		return docplatform.Workflow{}, dbErr("workflow", err)
	}
	return w, nil
}

// ListWorkflows returns the workflows of the given groups (every live
// group when all), by name.
func (s *Store) ListWorkflows(ctx context.Context, groupIDs []string, all bool) ([]docplatform.Workflow, error) {
	const what = "list workflows"
	out := []docplatform.Workflow{}
	if !all && len(groupIDs) == 0 {
		return out, nil
	}
	var q string
	var args []any
	switch {
	case all:
		q = `SELECT ` + workflowCols + ` FROM workflows w WHERE ` + liveGroupOf("w") + listWorkflowsOrder
	case len(groupIDs) == 1:
		// An API key's read (one group): the text is a constant, not
		// built again on every request.
		q, args = listWorkflowsOne, []any{groupIDs[0]}
	default:
		args = make([]any, len(groupIDs))
		for i, g := range groupIDs {
			args[i] = g
		}
		q = `SELECT ` + workflowCols + ` FROM workflows w WHERE w.group_id IN (` + placeholders(1, len(groupIDs)) + `)` + listWorkflowsOrder
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			return nil, dbErr(what, err)
		}
		out = append(out, w)
	}
	return out, dbErr(what, rows.Err())
}

// AddWorkflowVersion saves config as the workflow's next version. The
// counter is bumped in the same transaction (a row lock on PostgreSQL, the
// single writer on SQLite), so two saves at once get two numbers.
func (s *Store) AddWorkflowVersion(ctx context.Context, workflowID string, config []byte, by string) (docplatform.WorkflowVersion, error) {
	const what = "add workflow version"
	now := s.now()
	v := docplatform.WorkflowVersion{WorkflowID: workflowID, Config: config, CreatedBy: by, CreatedAt: now}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE workflows SET latest_version = latest_version + 1, updated_at = $2 WHERE id = $1 RETURNING latest_version`,
			workflowID, s.at(now)).Scan(&v.Version)
		if err != nil {
			return dbErr(what, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO workflow_versions (workflow_id, version, config, created_by, created_at) VALUES ($1, $2, $3, $4, $5)`,
			workflowID, v.Version, string(config), by, s.at(now))
		return dbErr(what, err)
	})
	if err != nil {
		return docplatform.WorkflowVersion{}, err
	}
	return v, nil
}

// WorkflowVersions returns every version of a workflow, newest first.
func (s *Store) WorkflowVersions(ctx context.Context, workflowID string) ([]docplatform.WorkflowVersion, error) {
	const what = "workflow versions"
	rows, err := s.r.QueryContext(ctx, `SELECT workflow_id, version, config, created_by, created_at FROM workflow_versions WHERE workflow_id = $1 ORDER BY version DESC`, workflowID)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	out := []docplatform.WorkflowVersion{}
	for rows.Next() {
		var v docplatform.WorkflowVersion
		var cfg string
		if err := rows.Scan(&v.WorkflowID, &v.Version, &cfg, &v.CreatedBy, timeCol{&v.CreatedAt}); err != nil {
			return nil, dbErr(what, err)
		}
		v.Config = []byte(cfg)
		out = append(out, v)
	}
	return out, dbErr(what, rows.Err())
}

// WorkflowVersion returns one version of a workflow.
func (s *Store) WorkflowVersion(ctx context.Context, workflowID string, version int) (docplatform.WorkflowVersion, error) {
	var v docplatform.WorkflowVersion
	var cfg string
	err := s.r.QueryRowContext(ctx, `SELECT workflow_id, version, config, created_by, created_at FROM workflow_versions WHERE workflow_id = $1 AND version = $2`, workflowID, version).
		Scan(&v.WorkflowID, &v.Version, &cfg, &v.CreatedBy, timeCol{&v.CreatedAt})
	if err != nil {
		return docplatform.WorkflowVersion{}, dbErr("workflow version", err)
	}
	v.Config = []byte(cfg)
	return v, nil
}

// DeleteWorkflow removes a workflow with all its versions.
func (s *Store) DeleteWorkflow(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM workflows WHERE id = $1`, id)
	return affected("delete workflow", res, err)
}
