package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

type workflowView struct {
	ID            string          `json:"id"`
	GroupID       string          `json:"groupId"`
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	LatestVersion int             `json:"latestVersion"`
	CreatedBy     string          `json:"createdBy"`
	CreatedAt     time.Time       `json:"createdAt"`
	UpdatedAt     time.Time       `json:"updatedAt"`
	Config        json.RawMessage `json:"config,omitempty"`
}

type versionView struct {
	WorkflowID string          `json:"workflowId"`
	Version    int             `json:"version"`
	Config     json.RawMessage `json:"config"`
	CreatedBy  string          `json:"createdBy"`
	CreatedAt  time.Time       `json:"createdAt"`
}

func viewWorkflow(wf docplatform.Workflow, config json.RawMessage) workflowView {
	return workflowView{wf.ID, wf.GroupID, wf.Name, wf.Description, wf.Latest, wf.CreatedBy, wf.CreatedAt.UTC(), wf.UpdatedAt.UTC(), config}
}

func viewVersion(v docplatform.WorkflowVersion) versionView {
	return versionView{v.WorkflowID, v.Version, v.Config, v.CreatedBy, v.CreatedAt.UTC()}
}

// maxConfig bounds one workflow configuration.
const maxConfig = 256 << 10

func validConfig(w http.ResponseWriter, cfg json.RawMessage) bool {
	t := strings.TrimSpace(string(cfg))
	switch {
	case t == "" || t[0] != '{':
		httperr.Write(w, http.StatusBadRequest, "config must be a JSON object")
	case len(t) > maxConfig:
		httperr.Write(w, http.StatusBadRequest, "config must be at most 256 KiB")
	default:
		return true
	}
	return false
}

// listWorkflows: GET /api/workflows[?groupId] → the workflows of the
// caller's groups, by name.
func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	id := IdentityFrom(r.Context())
	groups, filtered := id.GroupIDs()
	// Query builds a map even for no query: an API key's plain listing
	// has none.
	if gid := queryValue(r, "groupId"); gid != "" {
		if !s.allowGroupFilter(w, r, rs, gid, "") {
			return
		}
		groups, filtered = []string{gid}, true
	}
	wfs, err := rs.ListWorkflows(r.Context(), groups, !filtered)
	if err != nil {
		s.internalError(w, r, "list workflows", err)
		return
	}
	out := make([]workflowView, len(wfs))
	for i, wf := range wfs {
		out[i] = viewWorkflow(wf, nil)
	}
	// A struct, not map[string]any: the same body without a map to build
	// and sort on every listing.
	writeJSON(w, http.StatusOK, struct {
		Workflows []workflowView `json:"workflows"`
	}{out})
}

// createWorkflow: POST /api/workflows {"groupId", "name", "description"?,
// "config": {…}} → 201 with version 1 (group ADMIN). Name 1-100
// characters, description at most 1000 (as a group's). A name the group
// already uses: 409.
func (s *Server) createWorkflow(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	var b struct {
		GroupID     string          `json:"groupId"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Config      json.RawMessage `json:"config"`
	}
	if !decodeBody(w, r, &b) {
		return
	}
	b.Name = strings.TrimSpace(b.Name)
	if b.Name == "" || len([]rune(b.Name)) > 100 {
		httperr.Write(w, http.StatusBadRequest, "name must be 1 to 100 characters")
		return
	}
	if len([]rune(b.Description)) > 1000 {
		httperr.Write(w, http.StatusBadRequest, "description must be at most 1000 characters")
		return
	}
	if !validConfig(w, b.Config) {
		return
	}
	if _, ok := s.liveGroup(w, r, rs, b.GroupID); !ok {
		return
	}
	id := IdentityFrom(r.Context())
	wf, v, err := rs.CreateWorkflow(r.Context(), docplatform.Workflow{GroupID: b.GroupID, Name: b.Name, Description: b.Description, CreatedBy: id.UserID}, b.Config)
	if errors.Is(err, docplatform.ErrConflict) {
		httperr.Write(w, http.StatusConflict, "The group has a workflow with this name")
		return
	}
	if err != nil {
		s.storeErr(w, r, "Group", err)
		return
	}
	s.audit(r, docplatform.AuditWorkflowCreated, docplatform.OutcomeSuccess, id.UserID, wf.GroupID, wf.Name+" ("+wf.ID+")")
	writeJSON(w, http.StatusCreated, viewWorkflow(wf, v.Config))
}

// workflow loads the workflow named by the path and applies the group
// check.
func (s *Server) workflow(w http.ResponseWriter, r *http.Request, rs ResourceStore, minRole docplatform.Role) (docplatform.Workflow, bool) {
	if !validID(w, "id", r.PathValue("id")) {
		return docplatform.Workflow{}, false
	}
	wf, err := rs.Workflow(r.Context(), r.PathValue("id"))
	if errors.Is(err, docplatform.ErrNotFound) {
		httperr.Write(w, http.StatusNotFound, "Workflow not found")
		return wf, false
	}
	if err != nil {
		s.internalError(w, r, "load workflow", err)
		return wf, false
	}
	return wf, s.allow(w, r, wf.GroupID, minRole)
}

// getWorkflow: GET /api/workflows/{id} → the workflow with its latest
// configuration.
func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	wf, ok := s.workflow(w, r, rs, "")
	if !ok {
		return
	}
	v, err := rs.WorkflowVersion(r.Context(), wf.ID, wf.Latest)
	if err != nil {
		s.storeErr(w, r, "Workflow version", err)
		return
	}
	writeJSON(w, http.StatusOK, viewWorkflow(wf, v.Config))
}

// deleteWorkflow: DELETE /api/workflows/{id} → 204 (group ADMIN), with
// all its versions.
func (s *Server) deleteWorkflow(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	wf, ok := s.workflow(w, r, rs, docplatform.RoleAdmin)
	if !ok {
		return
	}
	if err := rs.DeleteWorkflow(r.Context(), wf.ID); err != nil {
		s.storeErr(w, r, "Workflow", err)
		return
	}
	s.audit(r, docplatform.AuditWorkflowDeleted, docplatform.OutcomeSuccess, IdentityFrom(r.Context()).UserID, wf.GroupID, wf.Name+" ("+wf.ID+")")
	w.WriteHeader(http.StatusNoContent)
}

// listWorkflowVersions: GET /api/workflows/{id}/versions, newest first.
func (s *Server) listWorkflowVersions(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	wf, ok := s.workflow(w, r, rs, "")
	if !ok {
		return
	}
	vs, err := rs.WorkflowVersions(r.Context(), wf.ID)
	if err != nil {
		s.internalError(w, r, "workflow versions", err)
		return
	}
	out := make([]versionView, len(vs))
	for i, v := range vs {
		out[i] = viewVersion(v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"versions": out})
}

// addWorkflowVersion: POST /api/workflows/{id}/versions {"config": {…}} →
// 201 with the next number (group ADMIN). Versions are never changed or
// renumbered: there is no PUT.
func (s *Server) addWorkflowVersion(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	wf, ok := s.workflow(w, r, rs, docplatform.RoleAdmin)
	if !ok {
		return
	}
	var b struct {
		Config json.RawMessage `json:"config"`
	}
	if !decodeBody(w, r, &b) || !validConfig(w, b.Config) {
		return
	}
	v, err := rs.AddWorkflowVersion(r.Context(), wf.ID, b.Config, IdentityFrom(r.Context()).UserID)
	if err != nil {
		s.storeErr(w, r, "Workflow", err)
		return
	}
	s.audit(r, docplatform.AuditWorkflowVersion, docplatform.OutcomeSuccess, IdentityFrom(r.Context()).UserID, wf.GroupID, fmt.Sprintf("%s v%d (%s)", wf.Name, v.Version, wf.ID))
	writeJSON(w, http.StatusCreated, viewVersion(v))
}

// getWorkflowVersion: GET /api/workflows/{id}/versions/{version}.
func (s *Server) getWorkflowVersion(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	// Versions are 32-bit in both databases (PostgreSQL refuses a larger
	// number in the query with an error, not an empty answer).
	n64, err := strconv.ParseInt(r.PathValue("version"), 10, 32)
	if err != nil || n64 < 1 {
		httperr.Write(w, http.StatusBadRequest, "version must be an integer from 1 to 2147483647")
		return
	}
	n := int(n64)
	wf, ok := s.workflow(w, r, rs, "")
	if !ok {
		return
	}
	v, err := rs.WorkflowVersion(r.Context(), wf.ID, n)
	if err != nil {
		s.storeErr(w, r, "Workflow version", err)
		return
	}
	writeJSON(w, http.StatusOK, viewVersion(v))
}
