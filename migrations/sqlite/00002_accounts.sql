-- +goose Up
CREATE TABLE users (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    -- Stored lower-cased, so uniqueness is case-insensitive.
    email             TEXT NOT NULL UNIQUE,
    name              TEXT NOT NULL,
    lang              TEXT NOT NULL DEFAULT 'zh-CN',
    password_hash     TEXT NOT NULL,
    email_verified_at DATETIME,
    platform_admin    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at        DATETIME NOT NULL
);

CREATE TABLE sessions (
    token  TEXT PRIMARY KEY,
    data   BLOB NOT NULL,
    expiry DATETIME NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expiry);

CREATE TABLE orgs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    kind               TEXT NOT NULL CHECK (kind IN ('team', 'lab', 'provider')),
    name               TEXT NOT NULL,
    personal           BOOLEAN NOT NULL DEFAULT FALSE,
    -- active for teams; pending, approved or rejected for labs and providers.
    status             TEXT NOT NULL CHECK (status IN ('active', 'pending', 'approved', 'rejected')),
    status_reason      TEXT NOT NULL DEFAULT '',
    institution        TEXT NOT NULL DEFAULT '',
    supervisor         TEXT NOT NULL DEFAULT '',
    email_domain       TEXT NOT NULL DEFAULT '',
    monthly_budget_fen INTEGER CHECK (monthly_budget_fen >= 0),
    member_cap_fen     INTEGER CHECK (member_cap_fen >= 0),
    reviewed_by        INTEGER REFERENCES users(id),
    reviewed_at        DATETIME,
    created_at         DATETIME NOT NULL
);
CREATE INDEX orgs_status ON orgs (status);

CREATE TABLE memberships (
    org_id       INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role         TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    -- For labs: the member's institutional address and when a mailed link confirmed it.
    edu_email    TEXT NOT NULL DEFAULT '',
    confirmed_at DATETIME,
    created_at   DATETIME NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

-- One-time links: email verification, password reset, lab address
-- confirmation, invitations. Only a hash of the token is stored.
CREATE TABLE email_tokens (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    purpose    TEXT NOT NULL CHECK (purpose IN ('verify', 'reset', 'lab_confirm', 'invite')),
    token_hash TEXT NOT NULL UNIQUE,
    user_id    INTEGER REFERENCES users(id) ON DELETE CASCADE,
    org_id     INTEGER REFERENCES orgs(id) ON DELETE CASCADE,
    email      TEXT NOT NULL,
    role       TEXT NOT NULL DEFAULT '',
    expires_at DATETIME NOT NULL,
    used_at    DATETIME,
    created_at DATETIME NOT NULL
);

CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    last_used_at DATETIME,
    revoked_at   DATETIME,
    created_at   DATETIME NOT NULL
);
CREATE INDEX api_tokens_user ON api_tokens (user_id);

-- Failed logins, for throttling across every replica.
CREATE TABLE login_failures (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    email TEXT NOT NULL,
    ip    TEXT NOT NULL,
    at    DATETIME NOT NULL
);
CREATE INDEX login_failures_email ON login_failures (email, at);
CREATE INDEX login_failures_ip ON login_failures (ip, at);

-- Mail: every message is written here in the sender's transaction; with
-- SMTP configured a worker delivers it, otherwise admins read it here.
CREATE TABLE outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    to_addr    TEXT NOT NULL,
    subject    TEXT NOT NULL,
    body       TEXT NOT NULL,
    lang       TEXT NOT NULL,
    created_at DATETIME NOT NULL,
    sent_at    DATETIME,
    last_error TEXT NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE outbox;
DROP TABLE login_failures;
DROP TABLE api_tokens;
DROP TABLE email_tokens;
DROP TABLE memberships;
DROP TABLE orgs;
DROP TABLE sessions;
DROP TABLE users;
