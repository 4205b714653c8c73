-- +goose Up
-- Double-entry ledger in integer fen. Every transaction's entries sum to
-- zero; an account's balance is the sum of its entries (balance_fen is a
-- cache kept in the same transaction, and tests prove it equal).
CREATE TABLE ledger_accounts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL CHECK (kind IN ('wallet', 'provider_payable', 'platform_revenue', 'payment_clearing', 'bank_clearing', 'promo_credit', 'sla_credit')),
    -- The organisation for wallets and provider payables; 0 for platform accounts.
    org_id      INTEGER NOT NULL DEFAULT 0,
    balance_fen INTEGER NOT NULL DEFAULT 0,
    created_at  DATETIME NOT NULL,
    UNIQUE (kind, org_id),
    -- A wallet never goes below zero.
    CHECK (kind <> 'wallet' OR balance_fen >= 0)
);

CREATE TABLE ledger_txns (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,
    memo       TEXT NOT NULL DEFAULT '',
    -- Once-only transactions (a trial credit per organisation, a top-up's
    -- fulfilment) carry a key; the unique index makes a repeat fail.
    idem_key   TEXT UNIQUE,
    topup_id   INTEGER,
    created_by INTEGER,
    created_at DATETIME NOT NULL
);

CREATE TABLE ledger_entries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    txn_id      INTEGER NOT NULL REFERENCES ledger_txns(id),
    account_id  INTEGER NOT NULL REFERENCES ledger_accounts(id),
    amount_fen  INTEGER NOT NULL CHECK (amount_fen <> 0),
    created_at  DATETIME NOT NULL
);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, id);
CREATE INDEX ledger_entries_txn ON ledger_entries (txn_id);

CREATE TABLE topups (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id              INTEGER NOT NULL REFERENCES orgs(id),
    user_id             INTEGER NOT NULL REFERENCES users(id),
    amount_fen          INTEGER NOT NULL CHECK (amount_fen > 0),
    method              TEXT NOT NULL CHECK (method IN ('stripe', 'bank_transfer')),
    status              TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'failed', 'flagged')),
    reference           TEXT NOT NULL UNIQUE,
    checkout_session_id TEXT,
    payment_intent_id   TEXT,
    received_fen        INTEGER,
    refunded_fen        INTEGER NOT NULL DEFAULT 0,
    note                TEXT NOT NULL DEFAULT '',
    confirmed_by        INTEGER REFERENCES users(id),
    created_at          DATETIME NOT NULL,
    paid_at             DATETIME
);
CREATE INDEX topups_org ON topups (org_id, id);
CREATE INDEX topups_status ON topups (status, method);

-- Every Stripe event ever processed, stored in the same transaction as its
-- effect: a replayed or concurrent duplicate hits the primary key.
CREATE TABLE stripe_events (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    topup_id    INTEGER,
    flagged     BOOLEAN NOT NULL DEFAULT FALSE,
    note        TEXT NOT NULL DEFAULT '',
    received_at DATETIME NOT NULL
);

CREATE TABLE refunds (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id           INTEGER NOT NULL REFERENCES orgs(id),
    user_id          INTEGER NOT NULL REFERENCES users(id),
    topup_id         INTEGER REFERENCES topups(id),
    amount_fen       INTEGER NOT NULL CHECK (amount_fen > 0),
    method           TEXT NOT NULL CHECK (method IN ('stripe', 'bank_transfer')),
    status           TEXT NOT NULL CHECK (status IN ('pending', 'done')),
    stripe_refund_id TEXT,
    created_at       DATETIME NOT NULL,
    done_at          DATETIME
);

-- +goose Down
DROP TABLE refunds;
DROP TABLE stripe_events;
DROP TABLE topups;
DROP TABLE ledger_entries;
DROP TABLE ledger_txns;
DROP TABLE ledger_accounts;
