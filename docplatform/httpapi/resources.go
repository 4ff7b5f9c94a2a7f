package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/upload"
	"github.com/govkit/govkit/internal/httperr"
)

// ResourceStore is what the group-scoped resources need from the database
// beyond Store, one interface per resource. sqlstore.Store implements it.
type ResourceStore interface {
	Store
	Auditor
	AuditReader
	GroupStore
	UserAdminStore
	DocumentStore
	upload.Rows
	WorkflowStore
	ReviewStore
}

// AuditReader lists the audit log.
type AuditReader interface {
	ListAudit(ctx context.Context, f docplatform.AuditFilter) ([]docplatform.AuditEntry, error)
}

// GroupStore keeps groups, memberships and membership requests.
type GroupStore interface {
	CreateGroup(ctx context.Context, name, description, createdBy string) (docplatform.Group, error)
	UpdateGroup(ctx context.Context, g docplatform.Group) error
	SoftDeleteGroup(ctx context.Context, id string) error
	// ChangeMembership sets (role "" removes) a membership atomically with
	// the check that the group keeps an ADMIN (docplatform.ErrLastAdmin).
	ChangeMembership(ctx context.Context, groupID, userID string, role docplatform.Role) (from docplatform.Role, err error)
	Memberships(ctx context.Context, groupID string) ([]docplatform.Membership, error)
	CreateMembershipRequest(ctx context.Context, userID, groupID, message string) (docplatform.MembershipRequest, error)
	MembershipRequest(ctx context.Context, id string) (docplatform.MembershipRequest, error)
	MembershipRequests(ctx context.Context, groupID, userID string, status docplatform.RequestStatus) ([]docplatform.MembershipRequest, error)
	DecideMembershipRequest(ctx context.Context, id string, approve bool, decidedBy string) (docplatform.MembershipRequest, error)
}

// UserAdminStore is what system admins do to users.
type UserAdminStore interface {
	ListUsers(ctx context.Context) ([]docplatform.User, error)
	SetSystemAdmin(ctx context.Context, userID string, admin bool) error
	DeleteUser(ctx context.Context, id string) error
}

// DocumentStore keeps documents' rows and their OCR results (a
// document's row comes and goes through upload.Rows).
type DocumentStore interface {
	Document(ctx context.Context, id string) (docplatform.Document, error)
	ListDocuments(ctx context.Context, f docplatform.DocumentFilter) ([]docplatform.Document, error)
	PutOCRResult(ctx context.Context, r docplatform.OCRResult) (docplatform.OCRResult, bool, error)
	OCRResult(ctx context.Context, documentID string) (docplatform.OCRResult, error)
}

// WorkflowStore keeps workflows and their immutable versions.
type WorkflowStore interface {
	CreateWorkflow(ctx context.Context, w docplatform.Workflow, config []byte) (docplatform.Workflow, docplatform.WorkflowVersion, error)
	Workflow(ctx context.Context, id string) (docplatform.Workflow, error)
	ListWorkflows(ctx context.Context, groupIDs []string, all bool) ([]docplatform.Workflow, error)
	AddWorkflowVersion(ctx context.Context, workflowID string, config []byte, by string) (docplatform.WorkflowVersion, error)
	WorkflowVersions(ctx context.Context, workflowID string) ([]docplatform.WorkflowVersion, error)
	WorkflowVersion(ctx context.Context, workflowID string, version int) (docplatform.WorkflowVersion, error)
	DeleteWorkflow(ctx context.Context, id string) error
}

// ReviewStore keeps review sessions (the document locks) and corrections.
type ReviewStore interface {
	StartReview(ctx context.Context, documentID, reviewerID string, ttl time.Duration) (docplatform.ReviewSession, bool, error)
	ReviewSession(ctx context.Context, id string) (docplatform.ReviewSession, error)
	DocumentReviews(ctx context.Context, documentID string) ([]docplatform.ReviewSession, error)
	AddCorrections(ctx context.Context, sessionID, reviewerID string, ttl time.Duration, cs []docplatform.Correction) ([]docplatform.Correction, error)
	Corrections(ctx context.Context, sessionID string) ([]docplatform.Correction, error)
	EndReview(ctx context.Context, sessionID, reviewerID string, status docplatform.ReviewStatus) (docplatform.ReviewSession, error)
}

// DocumentFiles keeps documents' bytes: filestore.Store (a directory) or
// s3store.Store (S3-compatible object storage), as DOCUMENT_STORAGE says.
// Uploads and deletions go through an upload.Manager (Resources.Uploads),
// which owns the life of the bytes and the rows; downloads Open.
type DocumentFiles interface {
	upload.Files
	// Open reads the file under key; size is the size recorded for it.
	// A missing file is filestore.ErrNotFound.
	Open(ctx context.Context, key string, size int64) (io.ReadSeekCloser, error)
}

// Resources configure the group-scoped resources.
type Resources struct {
	// Files keeps documents' bytes (DOCUMENT_STORAGE). Without it, uploads
	// and downloads answer 503.
	Files DocumentFiles
	// Uploads moves uploads and deletions of Files' documents through
	// their life; WithResources makes one when it is nil.
	Uploads *upload.Manager
	// MaxUpload bounds one document's size in bytes (DOCUMENT_MAX_BYTES,
	// default DefaultMaxUpload). The server's request body limit
	// (Options.MaxBody) must be at least this plus the multipart framing.
	MaxUpload int64
	// ReviewLock is how long a review session holds its document without
	// activity (REVIEW_LOCK_TTL_MS, default DefaultReviewLock). Submitting
	// corrections pushes the expiry out again.
	ReviewLock time.Duration
}

// Defaults of Resources.
const (
	DefaultMaxUpload  = 25 << 20
	DefaultReviewLock = 15 * time.Minute
)

// resourceCarrier is a Store that carries the resources' configuration
// (WithResources). It travels with the store because Options has no field
// for it yet; see WithResources.
type resourceCarrier interface {
	ResourceOptions() Resources
}

type withResources struct {
	ResourceStore
	res Resources
}

func (w withResources) ResourceOptions() Resources { return w.res }

// WithResources returns st as the Store of Options, carrying the
// resources' configuration for the resource routes.
func WithResources(st ResourceStore, res Resources) Store {
	if res.Uploads == nil && res.Files != nil {
		res.Uploads = upload.New(res.Files, st, upload.Options{})
	}
	return withResources{st, res}
}

// resources returns the resource store and configuration, or ok=false when
// the Store given to New cannot keep resources.
func (s *Server) resources() (ResourceStore, Resources, bool) {
	rs, ok := s.o.Store.(ResourceStore)
	if !ok {
		return nil, Resources{}, false
	}
	var res Resources
	if c, ok := s.o.Store.(resourceCarrier); ok {
		res = c.ResourceOptions()
	}
	if res.MaxUpload <= 0 {
		res.MaxUpload = DefaultMaxUpload
	}
	if res.ReviewLock <= 0 {
		res.ReviewLock = DefaultReviewLock
	}
	return rs, res, true
}

// rh is a resource handler: it gets the resource store and configuration.
type rh func(w http.ResponseWriter, r *http.Request, rs ResourceStore, res Resources)

func (s *Server) rsc(h rh) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rs, res, ok := s.resources()
		if !ok {
			httperr.Write(w, http.StatusServiceUnavailable, "Resources are not configured on this server")
			return
		}
		if name := badParam(r); name != "" {
			httperr.Write(w, http.StatusBadRequest, name+" must be valid UTF-8 without NUL characters")
			return
		}
		h(w, r, rs, res)
	}
}

// resourceRoutes declares the routes of the group-scoped resources, each
// with its access level beside its handler, as routeTable does for auth.
// Routes whose resource is named by id (a document, a workflow, a review
// session) are TokenOrAPIKey or Authenticated at the chain and check the
// resource's group in the handler with CheckGroupAccess, the seed's
// single-resource helper: the chain cannot know the group before the row
// is loaded.
func (s *Server) resourceRoutes() []Route {
	admin := docplatform.RoleAdmin
	return []Route{
		// Groups and memberships.
		{"GET", "/api/groups", Authenticated(), limitGlobal, s.rsc(s.listMyGroups)},
		{"POST", "/api/groups", SystemAdmin(), limitGlobal, s.rsc(s.createGroup)},
		{"GET", "/api/groups/{groupId}", Group(FromPath, "groupId", ""), limitGlobal, s.rsc(s.getGroup)},
		{"PUT", "/api/groups/{groupId}", Group(FromPath, "groupId", admin), limitGlobal, s.rsc(s.updateGroup)},
		{"DELETE", "/api/groups/{groupId}", SystemAdmin(), limitGlobal, s.rsc(s.deleteGroup)},
		{"GET", "/api/groups/{groupId}/members", Group(FromPath, "groupId", ""), limitGlobal, s.rsc(s.listMembers)},
		{"PUT", "/api/groups/{groupId}/members/{userId}", Group(FromPath, "groupId", admin), limitGlobal, s.rsc(s.setMemberRole)},
		{"DELETE", "/api/groups/{groupId}/members/{userId}", Group(FromPath, "groupId", admin), limitGlobal, s.rsc(s.removeMember)},
		{"POST", "/api/groups/{groupId}/requests", Authenticated(), limitGlobal, s.rsc(s.requestMembership)},
		{"GET", "/api/groups/{groupId}/requests", Group(FromPath, "groupId", admin), limitGlobal, s.rsc(s.listGroupRequests)},
		{"POST", "/api/groups/{groupId}/requests/{requestId}/approve", Group(FromPath, "groupId", admin), limitGlobal, s.rsc(s.approveRequest)},
		{"POST", "/api/groups/{groupId}/requests/{requestId}/reject", Group(FromPath, "groupId", admin), limitGlobal, s.rsc(s.rejectRequest)},
		{"GET", "/api/membership-requests", Authenticated(), limitGlobal, s.rsc(s.listMyRequests)},

		// System administration.
		{"GET", "/api/admin/groups", SystemAdmin(), limitGlobal, s.rsc(s.listAllGroups)},
		{"GET", "/api/admin/users", SystemAdmin(), limitGlobal, s.rsc(s.listUsers)},
		{"POST", "/api/admin/users/{id}/promote", SystemAdmin(), limitGlobal, s.rsc(s.promoteUser)},
		{"POST", "/api/admin/users/{id}/demote", SystemAdmin(), limitGlobal, s.rsc(s.demoteUser)},
		{"DELETE", "/api/admin/users/{id}", SystemAdmin(), limitGlobal, s.rsc(s.deleteUser)},

		// Documents and their OCR results.
		{"POST", "/api/documents", Group(FromQuery, "groupId", "").WithAPIKey(), limitGlobal, s.rsc(s.uploadDocument)},
		{"GET", "/api/documents", TokenOrAPIKey(), limitGlobal, s.rsc(s.listDocuments)},
		{"GET", "/api/documents/{id}", TokenOrAPIKey(), limitGlobal, s.rsc(s.getDocument)},
		{"GET", "/api/documents/{id}/content", TokenOrAPIKey(), limitGlobal, s.rsc(s.downloadDocument)},
		{"DELETE", "/api/documents/{id}", TokenOrAPIKey(), limitGlobal, s.rsc(s.deleteDocument)},
		{"PUT", "/api/documents/{id}/ocr", TokenOrAPIKey(), limitGlobal, s.rsc(s.putOCR)},
		{"GET", "/api/documents/{id}/ocr", TokenOrAPIKey(), limitGlobal, s.rsc(s.getOCR)},

		// Workflows.
		{"GET", "/api/workflows", TokenOrAPIKey(), limitGlobal, s.rsc(s.listWorkflows)},
		{"POST", "/api/workflows", Group(FromBody, "groupId", admin), limitGlobal, s.rsc(s.createWorkflow)},
		{"GET", "/api/workflows/{id}", TokenOrAPIKey(), limitGlobal, s.rsc(s.getWorkflow)},
		{"DELETE", "/api/workflows/{id}", Authenticated(), limitGlobal, s.rsc(s.deleteWorkflow)},
		{"GET", "/api/workflows/{id}/versions", TokenOrAPIKey(), limitGlobal, s.rsc(s.listWorkflowVersions)},
		{"POST", "/api/workflows/{id}/versions", Authenticated(), limitGlobal, s.rsc(s.addWorkflowVersion)},
		{"GET", "/api/workflows/{id}/versions/{version}", TokenOrAPIKey(), limitGlobal, s.rsc(s.getWorkflowVersion)},

		// Review sessions.
		{"POST", "/api/documents/{id}/reviews", Authenticated(), limitGlobal, s.rsc(s.startReview)},
		{"GET", "/api/documents/{id}/reviews", Authenticated(), limitGlobal, s.rsc(s.listDocumentReviews)},
		{"GET", "/api/reviews/{sessionId}", Authenticated(), limitGlobal, s.rsc(s.getReview)},
		{"POST", "/api/reviews/{sessionId}/corrections", Authenticated(), limitGlobal, s.rsc(s.addCorrections)},
		{"POST", "/api/reviews/{sessionId}/complete", Authenticated(), limitGlobal, s.rsc(s.completeReview)},
		{"POST", "/api/reviews/{sessionId}/abandon", Authenticated(), limitGlobal, s.rsc(s.abandonReview)},

		// Audit log.
		{"GET", "/api/audit", Authenticated(), limitGlobal, s.rsc(s.listAudit)},
		{"GET", "/api/audit/report", Authenticated(), limitGlobal, s.rsc(s.auditReport)},

		// API documentation.
		{"GET", "/api/openapi.json", Public(), limitGlobal, s.openAPI},
		{"GET", "/api/docs", Public(), limitGlobal, s.docsPage},
		{"GET", "/api/docs/{file}", Public(), limitGlobal, s.docsAsset},
	}
}

// badParam names the first path or query parameter that no database
// column can hold: invalid UTF-8 or a NUL (PostgreSQL's text refuses
// both, which would otherwise surface as a 500).
func badParam(r *http.Request) string {
	bad := func(v string) bool { return !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 }
	if bad(r.URL.Path) {
		return "The path"
	}
	if r.URL.RawQuery == "" {
		return "" // no parameters to check, and no map to build for none
	}
	for k, vs := range r.URL.Query() {
		if bad(k) {
			return "A query parameter name"
		}
		for _, v := range vs {
			if bad(v) {
				return k
			}
		}
	}
	return ""
}

// nulField returns the JSON path of the first string in v holding a NUL
// character ("" when none). Decoded JSON is valid UTF-8 already; NUL is
// what a database's text column still refuses. Raw JSON (configurations,
// OCR results) keeps its escapes and is not looked into.
func nulField(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nulField(v.Elem(), path)
		}
	case reflect.String:
		if strings.IndexByte(v.String(), 0) >= 0 {
			return path
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return ""
		}
		for i := range v.Len() {
			if p := nulField(v.Index(i), path+"["+strconv.Itoa(i)+"]"); p != "" {
				return p
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" {
				name = t.Field(i).Name
			}
			if path != "" {
				name = path + "." + name
			}
			if p := nulField(v.Field(i), name); p != "" {
				return p
			}
		}
	}
	return ""
}

// decodeBody reads a JSON object into v, refusing unknown fields, trailing
// data and a missing body with 400 (413 past the body limit).
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Anything but the end of the body is trailing data. (dec.More
		// would not see a stray ] or }.)
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			var mbe *http.MaxBytesError
			if errors.As(terr, &mbe) {
				err = terr
			} else {
				err = errors.New("unexpected data after the JSON object")
			}
		}
	}
	if err == nil {
		if p := nulField(reflect.ValueOf(v), ""); p != "" {
			httperr.Write(w, http.StatusBadRequest, "Invalid request body: "+p+" must not contain NUL characters")
			return false
		}
		return true
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		httperr.Write(w, http.StatusRequestEntityTooLarge, "Request body too large")
	case errors.Is(err, io.EOF):
		httperr.Write(w, http.StatusBadRequest, "Request body must be a JSON object")
	default:
		httperr.Write(w, http.StatusBadRequest, "Invalid request body: "+jsonProblem(err))
	}
	return false
}

// decodeOptionalBody is decodeBody for a body that may be left out: no
// bytes but white space (whatever Content-Length said, chunked included)
// leave v as it was.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any) bool {
	br := bufio.NewReader(r.Body)
	for {
		c, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			r.Body = io.NopCloser(errReader{err})
			return decodeBody(w, r, v)
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			_ = br.UnreadByte()
			r.Body = io.NopCloser(br)
			return decodeBody(w, r, v)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// isUUID reports whether s is a UUID in its textual 8-4-4-4-12 form, the
// only form the platform's ids take (sqlstore makes them with
// uuid.NewString). Anything else cannot name a group, document, workflow,
// review session or membership request: 400 before any lookup. User ids
// are the identity provider's subjects and are not checked.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// validID answers 400 naming the parameter unless v is a UUID.
func validID(w http.ResponseWriter, name, v string) bool {
	if isUUID(v) {
		return true
	}
	httperr.Write(w, http.StatusBadRequest, name+" must be a UUID")
	return false
}

// timeParam reads an optional RFC 3339 query parameter. Years before 1
// are refused: no resource is that old, and PostgreSQL cannot take year 0.
func timeParam(w http.ResponseWriter, r *http.Request, name string) (*time.Time, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, true
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || t.UTC().Year() < 1 || t.UTC().Year() > 9999 {
		httperr.Write(w, http.StatusBadRequest, name+" must be an RFC 3339 time (years 0001 to 9999)")
		return nil, false
	}
	return &t, true
}

// timeRange reads the query parameters from and to (inclusive start,
// exclusive end); to before from is 400.
func timeRange(w http.ResponseWriter, r *http.Request, fromName, toName string) (from, to *time.Time, ok bool) {
	if from, ok = timeParam(w, r, fromName); !ok {
		return nil, nil, false
	}
	if to, ok = timeParam(w, r, toName); !ok {
		return nil, nil, false
	}
	if from != nil && to != nil && to.Before(*from) {
		httperr.Write(w, http.StatusBadRequest, toName+" must not be before "+fromName)
		return nil, nil, false
	}
	return from, to, true
}

// jsonProblem turns a decoding error into a message naming the field.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field + " must be " + te.Type.String()
	}
	msg := err.Error()
	if i := strings.Index(msg, "json: "); i >= 0 {
		msg = msg[i+6:]
	}
	return msg
}

// actor names who acted, for audit rows and created_by columns.
func actor(id *docplatform.Identity) string {
	if id == nil {
		return ""
	}
	if id.ViaAPIKey() {
		return "apikey:" + id.APIKeyID
	}
	return id.UserID
}

// allow applies the single-resource helper (CheckGroupAccess) to a
// loaded resource's group and answers a refusal; a 403 is audited as
// access denied.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, groupID string, minRole docplatform.Role) bool {
	id := IdentityFrom(r.Context())
	switch CheckGroupAccess(id, &groupID, minRole) {
	case 0:
		return true
	case http.StatusForbidden:
		if id != nil && id.GroupRoles[groupID] != "" {
			s.deny(w, r, groupID, "Insufficient role within the group")
		} else {
			s.deny(w, r, groupID, "User is not a member of the resource's group")
		}
	default:
		httperr.Write(w, http.StatusNotFound, "Not found")
	}
	return false
}

// allowGroupFilter checks a groupId a listing is narrowed to: a UUID, one
// of the caller's groups (the chain's identity holds live groups only) or,
// for a system admin who bypasses that, a live group (404 otherwise).
func (s *Server) allowGroupFilter(w http.ResponseWriter, r *http.Request, rs ResourceStore, gid string, minRole docplatform.Role) bool {
	if !validID(w, "groupId", gid) || !s.allow(w, r, gid, minRole) {
		return false
	}
	if id := IdentityFrom(r.Context()); id != nil && id.IsSystemAdmin {
		_, ok := s.liveGroup(w, r, rs, gid)
		return ok
	}
	return true
}

// storeErr answers a store error: not found 404, conflict 409, invalid
// 400, anything else 500.
func (s *Server) storeErr(w http.ResponseWriter, r *http.Request, what string, err error) {
	switch {
	case errors.Is(err, docplatform.ErrNotFound):
		httperr.Write(w, http.StatusNotFound, what+" not found")
	case errors.Is(err, docplatform.ErrConflict):
		httperr.Write(w, http.StatusConflict, what+": conflict")
	case errors.Is(err, docplatform.ErrInvalid):
		httperr.Write(w, http.StatusBadRequest, err.Error())
	default:
		s.internalError(w, r, what, err)
	}
}

// ResourceBodyLimits are the per-route body limits the resources need
// beyond Options.MaxBody, for Options.RouteMaxBody: an upload may carry
// MaxUpload bytes plus the multipart framing.
func ResourceBodyLimits(res Resources) map[string]int64 {
	if res.MaxUpload <= 0 {
		res.MaxUpload = DefaultMaxUpload
	}
	return map[string]int64{"POST /api/documents": res.MaxUpload + 64<<10}
}
