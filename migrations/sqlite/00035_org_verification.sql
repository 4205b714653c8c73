-- +goose Up
-- Organisation verification (企业认证, issue 21): a team, lab or provider
-- gives its unified social credit code (统一社会信用代码, checked with its
-- GB 32100 check character), its registered name, its legal
-- representative (法定代表人) and its business licence (营业执照); a
-- platform admin reviews it. A provider organisation is paid out only
-- once verified (--real-name required).
--
-- identity_org_verifications: one row per submission, newest last.
-- status pending (waiting for review; one at a time per organisation),
-- verified, rejected (reason says why, shown to the organisation, which
-- may submit again) or reset (a platform admin reopened a verified
-- organisation, which then submits again). source 'form' (the
-- organisation's page) or 'operator' (an operator vouched for it:
-- `suanli admin create-user --provider`, the demo; no licence).
-- consent_version and consent_at are the privacy notice the submitter
-- agreed to, and when. licence_type and licence_bytes describe the
-- licence file, whose content is only ever stored sealed.
CREATE TABLE identity_org_verifications (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id          INTEGER NOT NULL REFERENCES orgs(id),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'verified', 'rejected', 'reset')),
    source          TEXT NOT NULL DEFAULT 'form' CHECK (source IN ('form', 'operator')),
    credit_code     TEXT NOT NULL DEFAULT '',
    org_name        TEXT NOT NULL DEFAULT '',
    legal_rep       TEXT NOT NULL DEFAULT '',
    licence_type    TEXT NOT NULL DEFAULT '' CHECK (licence_type IN ('', 'png', 'jpeg', 'pdf')),
    licence_bytes   INTEGER NOT NULL DEFAULT 0 CHECK (licence_bytes >= 0),
    consent_version TEXT NOT NULL DEFAULT '',
    consent_at      DATETIME,
    submitted_by    INTEGER REFERENCES users(id),
    submitted_at    DATETIME NOT NULL,
    reviewed_by     INTEGER REFERENCES users(id),
    reviewed_at     DATETIME,
    reason          TEXT NOT NULL DEFAULT ''
);
CREATE INDEX identity_org_verifications_org ON identity_org_verifications (org_id, id);
-- One submission waits for review per organisation (a double submit is
-- refused by the database, not only by code); the admin's queue reads them.
CREATE UNIQUE INDEX identity_org_verifications_one_pending ON identity_org_verifications (org_id) WHERE status = 'pending';
-- At most one verification in force per organisation.
CREATE UNIQUE INDEX identity_org_verifications_one_verified ON identity_org_verifications (org_id) WHERE status = 'verified';

-- identity_org_licences: the licence file of a submission, sealed under
-- the PII key ring (AES-256-GCM, bound to the organisation and the
-- submission), kept apart so that no list ever reads it. Only the admin
-- review opens it, and every opening is in the audit log.
CREATE TABLE identity_org_licences (
    verification_id INTEGER PRIMARY KEY REFERENCES identity_org_verifications(id) ON DELETE CASCADE,
    sealed          TEXT NOT NULL
);

-- +goose Down
DROP TABLE identity_org_licences;
DROP TABLE identity_org_verifications;
