-- +goose NO TRANSACTION
-- +goose Up
-- ledger_accounts is rebuilt for its new kinds (SQLite cannot change a
-- CHECK in place), with foreign keys off outside a transaction as in
-- 00007; the writer pool is one connection, so the pragmas hold.
PRAGMA foreign_keys = OFF;
BEGIN;

CREATE TABLE ledger_accounts_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL CHECK (kind IN ('wallet', 'provider_payable', 'platform_revenue', 'payment_clearing', 'bank_clearing',
                                              'promo_credit', 'sla_credit', 'provider_unearned', 'provider_receivable')),
    -- The organisation for wallets; the provider for provider accounts;
    -- 0 for platform accounts.
    org_id      INTEGER NOT NULL DEFAULT 0,
    balance_fen INTEGER NOT NULL DEFAULT 0,
    created_at  DATETIME NOT NULL,
    UNIQUE (kind, org_id),
    -- A wallet never goes below zero, nor does unearned term money; what a
    -- provider owes is never positive. (A provider's payable keeps its sign
    -- by models.Post and is reported by the ledger check: a database from
    -- before this migration may hold a negative one to resolve.)
    CHECK (kind <> 'wallet' OR balance_fen >= 0),
    CHECK (kind <> 'provider_unearned' OR balance_fen >= 0),
    CHECK (kind <> 'provider_receivable' OR balance_fen <= 0)
);
INSERT INTO ledger_accounts_new (id, kind, org_id, balance_fen, created_at)
    SELECT id, kind, org_id, balance_fen, created_at FROM ledger_accounts;
DROP TABLE ledger_accounts;
ALTER TABLE ledger_accounts_new RENAME TO ledger_accounts;

-- A week or month term's price is earned as the term runs (market/terms.go):
-- earned_fen is how much of billed_fen has moved from the provider's
-- unearned account to its payable. Terms sold before this migration were
-- credited to the payable in full when paid, so they count as earned.
ALTER TABLE rentals ADD COLUMN earned_fen INTEGER NOT NULL DEFAULT 0 CHECK (earned_fen >= 0);
UPDATE rentals SET earned_fen = billed_fen WHERE term <> 'on_demand';
-- The meter's earning pass reads only the terms with something left to earn.
CREATE INDEX rentals_unearned ON rentals (id) WHERE term <> 'on_demand' AND earned_fen < billed_fen;

-- Sessions carry the epoch of their login; raising a user's epoch (a
-- password change or reset, "log out other sessions") ends every older one.
ALTER TABLE users ADD COLUMN session_epoch INTEGER NOT NULL DEFAULT 0;
-- How many organisations the user may create per day (NULL: the default,
-- accounts.DefaultOrgsPerDay); a platform admin may raise it.
ALTER TABLE users ADD COLUMN orgs_per_day INTEGER CHECK (orgs_per_day >= 0);

-- Counted attempts for throttles that have no row of their own (sign-ups
-- per client address, reset and verification mails per address and email),
-- shared by every replica.
CREATE TABLE throttle_events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    kind    TEXT NOT NULL,
    subject TEXT NOT NULL,
    at      DATETIME NOT NULL
);
CREATE INDEX throttle_events_subject ON throttle_events (kind, subject, at);
CREATE INDEX throttle_events_at ON throttle_events (at);

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
DROP INDEX rentals_unearned;
DROP TABLE throttle_events;
ALTER TABLE users DROP COLUMN orgs_per_day;
ALTER TABLE users DROP COLUMN session_epoch;
ALTER TABLE rentals DROP COLUMN earned_fen;
