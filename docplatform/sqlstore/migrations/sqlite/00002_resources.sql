-- The group-scoped resources: membership requests, documents, OCR results,
-- workflows with immutable versions, review sessions with their lock, and
-- the audit log. Every row carries group_id directly or through its
-- document.
-- Times are TEXT in the fixed-width UTC layout of 00001.

-- +goose Up
CREATE TABLE membership_requests (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    group_id   TEXT NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    message    TEXT NOT NULL DEFAULT '',
    status     TEXT NOT NULL CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED')),
    created_at TEXT NOT NULL,
    decided_by TEXT NOT NULL DEFAULT '',
    decided_at TEXT
);
-- One open request per user and group.
CREATE UNIQUE INDEX membership_requests_pending ON membership_requests (user_id, group_id) WHERE status = 'PENDING';
CREATE INDEX membership_requests_group ON membership_requests (group_id, created_at);

CREATE TABLE documents (
    id           TEXT PRIMARY KEY,
    group_id     TEXT NOT NULL REFERENCES groups (id),
    file_name    TEXT NOT NULL CHECK (file_name <> ''),
    content_type TEXT NOT NULL,
    size         INTEGER NOT NULL CHECK (size >= 0),
    sha256       TEXT NOT NULL,
    storage_key  TEXT NOT NULL UNIQUE,
    uploaded_by  TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL
);
-- Listings are per group, newest first, paged by (created_at, id).
CREATE INDEX documents_group_created ON documents (group_id, created_at DESC, id DESC);

CREATE TABLE ocr_results (
    document_id TEXT PRIMARY KEY REFERENCES documents (id) ON DELETE CASCADE,
    engine      TEXT NOT NULL DEFAULT '',
    result      TEXT NOT NULL,
    written_by  TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE workflows (
    id             TEXT PRIMARY KEY,
    group_id       TEXT NOT NULL REFERENCES groups (id),
    name           TEXT NOT NULL CHECK (name <> ''),
    description    TEXT NOT NULL DEFAULT '',
    latest_version INTEGER NOT NULL CHECK (latest_version >= 1),
    created_by     TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);
CREATE UNIQUE INDEX workflows_group_name ON workflows (group_id, lower(name));

CREATE TABLE workflow_versions (
    workflow_id TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL CHECK (version >= 1),
    config      TEXT NOT NULL,
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    PRIMARY KEY (workflow_id, version)
);

CREATE TABLE review_sessions (
    id          TEXT PRIMARY KEY,
    document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    reviewer_id TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('ACTIVE', 'COMPLETED', 'ABANDONED', 'EXPIRED')),
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    ended_at    TEXT
);
-- The document lock: at most one ACTIVE session per document, enforced by
-- the database so two reviewers starting at once cannot both win.
CREATE UNIQUE INDEX review_sessions_lock ON review_sessions (document_id) WHERE status = 'ACTIVE';

CREATE TABLE review_corrections (
    id             TEXT PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES review_sessions (id) ON DELETE CASCADE,
    field          TEXT NOT NULL CHECK (field <> ''),
    original_value TEXT NOT NULL DEFAULT '',
    value          TEXT NOT NULL,
    created_at     TEXT NOT NULL
);
CREATE INDEX review_corrections_session ON review_corrections (session_id, created_at);

CREATE TABLE audit_log (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    at       TEXT NOT NULL,
    event    TEXT NOT NULL,
    action   TEXT NOT NULL,
    actor    TEXT NOT NULL DEFAULT '',
    group_id TEXT NOT NULL DEFAULT '',
    outcome  TEXT NOT NULL CHECK (outcome IN ('success', 'failure', 'denied')),
    ip       TEXT NOT NULL DEFAULT '',
    detail   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_group_at ON audit_log (group_id, at);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE review_corrections;
DROP TABLE review_sessions;
DROP TABLE workflow_versions;
DROP TABLE workflows;
DROP TABLE ocr_results;
DROP TABLE documents;
DROP TABLE membership_requests;
