-- +goose NO TRANSACTION
-- +goose Up
-- Before 00009 a refund or an SLA credit after a payout could take a
-- provider's payable below zero. Such a balance is money the provider
-- owes: it moves, as one balanced ledger transaction per provider, to the
-- provider's receivable, which the next payout offsets (market/payouts.go).
-- Times are written as the application writes them (UTC with an offset),
-- so they compare in order with its rows. Then ledger_accounts is rebuilt (as in 00009) with a CHECK that keeps
-- the payable's sign as models.Post does.
PRAGMA foreign_keys = OFF;
BEGIN;

INSERT INTO ledger_accounts (kind, org_id, balance_fen, created_at)
    SELECT 'provider_receivable', p.org_id, 0, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now') FROM ledger_accounts p
    WHERE p.kind = 'provider_payable' AND p.balance_fen < 0
      AND NOT EXISTS (SELECT 1 FROM ledger_accounts r WHERE r.kind = 'provider_receivable' AND r.org_id = p.org_id);
INSERT INTO ledger_txns (kind, memo, memo_msg, idem_key, created_at)
    SELECT 'owed_moved', 'amount owed by the provider moved from its payable to its receivable',
           '{"key":"memo.owed_moved"}', 'owed_moved:' || p.org_id, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')
    FROM ledger_accounts p WHERE p.kind = 'provider_payable' AND p.balance_fen < 0;
INSERT INTO ledger_entries (txn_id, account_id, amount_fen, created_at)
    SELECT t.id, p.id, -p.balance_fen, t.created_at FROM ledger_accounts p
    JOIN ledger_txns t ON t.idem_key = 'owed_moved:' || p.org_id
    WHERE p.kind = 'provider_payable' AND p.balance_fen < 0;
INSERT INTO ledger_entries (txn_id, account_id, amount_fen, created_at)
    SELECT t.id, r.id, p.balance_fen, t.created_at FROM ledger_accounts p
    JOIN ledger_txns t ON t.idem_key = 'owed_moved:' || p.org_id
    JOIN ledger_accounts r ON r.kind = 'provider_receivable' AND r.org_id = p.org_id
    WHERE p.kind = 'provider_payable' AND p.balance_fen < 0;
UPDATE ledger_accounts SET balance_fen = balance_fen + (
        SELECT p.balance_fen FROM ledger_accounts p WHERE p.kind = 'provider_payable' AND p.org_id = ledger_accounts.org_id)
    WHERE kind = 'provider_receivable'
      AND EXISTS (SELECT 1 FROM ledger_accounts p WHERE p.kind = 'provider_payable' AND p.org_id = ledger_accounts.org_id AND p.balance_fen < 0);
UPDATE ledger_accounts SET balance_fen = 0 WHERE kind = 'provider_payable' AND balance_fen < 0;

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
    -- Owed money (a wallet, a provider's payable, unearned term money)
    -- never goes below zero; what a provider owes is never positive.
    CHECK (kind <> 'wallet' OR balance_fen >= 0),
    CHECK (kind <> 'provider_payable' OR balance_fen >= 0),
    CHECK (kind <> 'provider_unearned' OR balance_fen >= 0),
    CHECK (kind <> 'provider_receivable' OR balance_fen <= 0)
);
INSERT INTO ledger_accounts_new (id, kind, org_id, balance_fen, created_at)
    SELECT id, kind, org_id, balance_fen, created_at FROM ledger_accounts;
DROP TABLE ledger_accounts;
ALTER TABLE ledger_accounts_new RENAME TO ledger_accounts;

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
-- The payable's CHECK stays: SQLite cannot drop it without another
-- rebuild, and no earlier version writes a negative payable on purpose.
