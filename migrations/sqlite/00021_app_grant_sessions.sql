-- +goose Up
-- An app grant remembers the marketplace session that made its ticket
-- (the SHA-256 of that session's token), so that logging out there ends
-- the apps origin's sessions it opened too; '' for grants made before.
ALTER TABLE app_grants ADD COLUMN session_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX app_grants_session ON app_grants (session_hash);

-- +goose Down
DROP INDEX app_grants_session;
ALTER TABLE app_grants DROP COLUMN session_hash;
