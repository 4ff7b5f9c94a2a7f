-- A system admin's listing spans every group, newest first: without an
-- index on the order alone it sorted the whole table on every page.

-- +goose Up
CREATE INDEX documents_created ON documents (created_at DESC, id DESC);

-- +goose Down
DROP INDEX documents_created;
