-- +goose Up
-- Idempotency-Key on the public API (web/idempotency.go): the first answer
-- to a POST, kept 24 h, replayed to a retry with the same key and body.
-- The unique index is what lets only one of two concurrent duplicates run:
-- each inserts an in-progress row (status 0) first, and the loser sees
-- the winner's row.
CREATE TABLE idempotency_keys (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    idem_key     TEXT NOT NULL,
    -- sha256 of method, path and body, hex.
    request_hash TEXT NOT NULL,
    -- 0 while the first request runs, then its HTTP status.
    status       INTEGER NOT NULL DEFAULT 0,
    content_type TEXT NOT NULL DEFAULT '',
    location     TEXT NOT NULL DEFAULT '',
    body         TEXT NOT NULL DEFAULT '',
    created_at   DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL
);
CREATE UNIQUE INDEX idempotency_keys_user_key ON idempotency_keys (user_id, idem_key);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
