-- +goose Up
-- Real-name verification of individuals (实名认证, issue 21).
--
-- identity_individuals: a user's verification, one row per user, written
-- again when they start over (after a rejection, or to change the phone
-- number before it is verified). status pending (an SMS code is on its
-- way), verified or rejected. The resident ID number is never stored in
-- clear: id_sealed is it sealed under the PII key ring (AES-GCM, bound to
-- the user), id_mask its masked form (5101**********1234) and id_digest
-- its keyed digest (HMAC under the ring's current key), a blind index so
-- that one ID number is verified on one account only. An operator's
-- verification (suanli admin create-user --verified-identity) stores no
-- ID at all: method 'operator', id_digest NULL. consent_version and
-- consent_at are the privacy notice the user agreed to, and when.
CREATE TABLE identity_individuals (
    user_id         INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'verified', 'rejected')),
    method          TEXT NOT NULL DEFAULT 'sms' CHECK (method IN ('sms', 'operator')),
    legal_name      TEXT NOT NULL DEFAULT '',
    id_sealed       TEXT NOT NULL DEFAULT '',
    id_mask         TEXT NOT NULL DEFAULT '',
    id_digest       TEXT,
    phone           TEXT NOT NULL DEFAULT '',
    consent_version TEXT NOT NULL DEFAULT '',
    consent_at      DATETIME,
    submitted_at    DATETIME NOT NULL,
    verified_at     DATETIME,
    rejected_at     DATETIME,
    reject_reason   TEXT NOT NULL DEFAULT '',
    reviewed_by     INTEGER REFERENCES users(id),
    updated_at      DATETIME NOT NULL
);
CREATE UNIQUE INDEX identity_individuals_one_verified ON identity_individuals (id_digest) WHERE status = 'verified' AND id_digest IS NOT NULL;

-- sms_codes: verification codes sent by SMS. code_hash is the code's
-- keyed digest, never the code; a code is good until expires_at, once
-- (used_at), and dies after its fifth wrong try (failed_tries). The rows
-- are also the sending throttles' counts (per number, per client
-- address), which every replica reads alike.
CREATE TABLE sms_codes (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    purpose      TEXT NOT NULL,
    phone        TEXT NOT NULL,
    ip           TEXT NOT NULL DEFAULT '',
    code_hash    TEXT NOT NULL,
    failed_tries INTEGER NOT NULL DEFAULT 0,
    created_at   DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL,
    used_at      DATETIME
);
CREATE INDEX sms_codes_user ON sms_codes (user_id, purpose, id);
CREATE INDEX sms_codes_phone ON sms_codes (phone, created_at);
CREATE INDEX sms_codes_ip ON sms_codes (ip, created_at);

-- sms_outbox: text messages when no SMS provider is configured, read by
-- platform admins (and the demo) on /admin/sms, as the mail outbox is.
CREATE TABLE sms_outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    to_phone   TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE sms_outbox;
DROP TABLE sms_codes;
DROP TABLE identity_individuals;
