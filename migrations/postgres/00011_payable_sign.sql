-- +goose Up
-- Before 00009 a refund or an SLA credit after a payout could take a
-- provider's payable below zero. Such a balance is money the provider
-- owes: it moves, as one balanced ledger transaction per provider, to the
-- provider's receivable, which the next payout offsets (market/payouts.go).
-- Then the database keeps the payable's sign as models.Post does.
INSERT INTO ledger_accounts (kind, org_id, balance_fen, created_at)
    SELECT 'provider_receivable', p.org_id, 0, now() FROM ledger_accounts p
    WHERE p.kind = 'provider_payable' AND p.balance_fen < 0
      AND NOT EXISTS (SELECT 1 FROM ledger_accounts r WHERE r.kind = 'provider_receivable' AND r.org_id = p.org_id);
INSERT INTO ledger_txns (kind, memo, memo_msg, idem_key, created_at)
    SELECT 'owed_moved', 'amount owed by the provider moved from its payable to its receivable',
           '{"key":"memo.owed_moved"}', 'owed_moved:' || p.org_id, now()
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
UPDATE ledger_accounts r SET balance_fen = r.balance_fen + p.balance_fen FROM ledger_accounts p
    WHERE r.kind = 'provider_receivable' AND p.kind = 'provider_payable' AND p.org_id = r.org_id AND p.balance_fen < 0;
UPDATE ledger_accounts SET balance_fen = 0 WHERE kind = 'provider_payable' AND balance_fen < 0;
ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_payable_sign CHECK (kind <> 'provider_payable' OR balance_fen >= 0);

-- +goose Down
-- The moved balances stay moved: they are owed, and the payouts offset them.
ALTER TABLE ledger_accounts DROP CONSTRAINT ledger_accounts_payable_sign;
