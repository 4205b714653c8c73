-- +goose Up
-- Renters' apps (Jupyter, declared ports) served on an origin of their own
-- (--apps-domain: https://r{rental}.APPS-DOMAIN), where the marketplace's
-- session cookie is never sent. The marketplace hands the browser a
-- one-time ticket (kind 'ticket', a minute) on its way there, and the
-- apps origin trades it for its own session (kind 'session', hours), for
-- that user and that rental only. Only the tokens' SHA-256 are kept; a
-- grant taken with an older session epoch (a password change, "log out
-- other sessions") opens nothing.
CREATE TABLE app_grants (
    token_hash    TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('ticket', 'session')),
    user_id       INTEGER NOT NULL REFERENCES users (id),
    rental_id     INTEGER NOT NULL REFERENCES rentals (id),
    session_epoch INTEGER NOT NULL,
    expires_at    DATETIME NOT NULL,
    used_at       DATETIME
);
CREATE INDEX app_grants_expires ON app_grants (expires_at);

-- +goose Down
DROP TABLE app_grants;
