-- +goose Up
-- VAT invoices (发票, issue 21): an organisation asks for a 数电票, normal
-- (普票) or special (专票), for cash it paid in and has not had refunded
-- or invoiced; a platform admin issues it (the tax system's number, date
-- and PDF/OFD file), rejects it, or later voids (作废) or reverses (红冲)
-- it. requested and issued invoices count against what may still be
-- invoiced (package invoices); the rest are history. number and
-- red_number are the tax system's, unique where set. issue_date is the
-- invoice's date as written on it, YYYY-MM-DD (Asia/Shanghai).
CREATE TABLE invoices (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id       INTEGER NOT NULL REFERENCES orgs(id),
    user_id      INTEGER NOT NULL REFERENCES users(id),
    kind         TEXT NOT NULL CHECK (kind IN ('normal', 'special')),
    title        TEXT NOT NULL,
    taxpayer_id  TEXT NOT NULL DEFAULT '',
    address      TEXT NOT NULL DEFAULT '',
    phone        TEXT NOT NULL DEFAULT '',
    bank         TEXT NOT NULL DEFAULT '',
    bank_account TEXT NOT NULL DEFAULT '',
    email        TEXT NOT NULL DEFAULT '',
    remark       TEXT NOT NULL DEFAULT '',
    amount_fen   INTEGER NOT NULL CHECK (amount_fen > 0),
    status       TEXT NOT NULL CHECK (status IN ('requested', 'issued', 'voided', 'reversed', 'cancelled', 'rejected')),
    number       TEXT,
    issue_date   TEXT NOT NULL DEFAULT '',
    file_type    TEXT NOT NULL DEFAULT '',
    file_size    INTEGER NOT NULL DEFAULT 0,
    red_number   TEXT,
    reason       TEXT NOT NULL DEFAULT '',
    created_at   DATETIME NOT NULL,
    issued_at    DATETIME,
    issued_by    INTEGER REFERENCES users(id),
    ended_at     DATETIME,
    ended_by     INTEGER REFERENCES users(id)
);
CREATE INDEX invoices_org ON invoices (org_id, status);
CREATE INDEX invoices_status ON invoices (status, id);
CREATE INDEX invoices_issue_date ON invoices (issue_date);
CREATE INDEX invoices_created ON invoices (created_at);
CREATE UNIQUE INDEX invoices_number ON invoices (number);
CREATE UNIQUE INDEX invoices_red_number ON invoices (red_number);

-- The issued invoice's file, apart so that lists never read it.
CREATE TABLE invoice_files (
    invoice_id INTEGER PRIMARY KEY REFERENCES invoices(id),
    data       BLOB NOT NULL,
    sha256     TEXT NOT NULL,
    created_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE invoice_files;
DROP TABLE invoices;
