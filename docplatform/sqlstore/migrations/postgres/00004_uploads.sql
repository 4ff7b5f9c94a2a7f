-- Uploads on their way in and bytes on their way out (package
-- docplatform/upload): a row here names a storage key whose bytes may
-- exist but are not a listed document. 'stored': every byte is staged and
-- the document waits for its object to be completed; 'discarding': the
-- bytes must go (a failed upload, a deleted document). A key moves between
-- this table and documents in one transaction, so at every moment a key
-- whose bytes may exist is named by exactly one row of one of the two.

-- +goose Up
CREATE TABLE uploads (
    storage_key  TEXT PRIMARY KEY,
    state        TEXT NOT NULL CHECK (state IN ('stored', 'discarding')),
    document_id  TEXT NOT NULL,
    group_id     TEXT NOT NULL,
    file_name    TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         BIGINT NOT NULL CHECK (size >= 0),
    sha256       TEXT NOT NULL,
    uploaded_by  TEXT NOT NULL DEFAULT '',
    changed_at   TIMESTAMPTZ NOT NULL
);
-- The sweeper's question: which rows have sat in their state too long.
CREATE INDEX uploads_changed ON uploads (changed_at);

-- +goose Down
DROP TABLE uploads;
