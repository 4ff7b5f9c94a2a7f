-- Users, groups, memberships and API keys: what authorization rests on.
-- Times are TEXT in one fixed-width UTC layout (see sqlstore.timeLayout), so
-- comparing and ordering them as text is comparing them as times.

-- +goose Up
CREATE TABLE users (
    id                 TEXT PRIMARY KEY,
    email              TEXT NOT NULL DEFAULT '',
    name               TEXT NOT NULL DEFAULT '',
    preferred_username TEXT NOT NULL DEFAULT '',
    is_system_admin    INTEGER NOT NULL DEFAULT 0 CHECK (is_system_admin IN (0, 1)),
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL
);
CREATE INDEX users_email ON users (lower(email)) WHERE email <> '';

CREATE TABLE groups (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL CHECK (name <> ''),
    description TEXT NOT NULL DEFAULT '',
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    deleted_at  TEXT
);
CREATE UNIQUE INDEX groups_live_name ON groups (lower(name)) WHERE deleted_at IS NULL;

CREATE TABLE memberships (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    group_id   TEXT NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('MEMBER', 'ADMIN')),
    created_at TEXT NOT NULL,
    PRIMARY KEY (user_id, group_id)
);
CREATE INDEX memberships_group ON memberships (group_id);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    group_id     TEXT NOT NULL UNIQUE REFERENCES groups (id) ON DELETE CASCADE,
    key_hash     BLOB NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    created_by   TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    last_used_at TEXT
);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE memberships;
DROP TABLE groups;
DROP TABLE users;
