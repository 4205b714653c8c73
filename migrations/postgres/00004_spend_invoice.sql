-- +goose Up
-- An optional cap on an organisation's spending per rolling hour, and the
-- invoice details printed on its receipts.
ALTER TABLE orgs ADD COLUMN hourly_cap_fen BIGINT CHECK (hourly_cap_fen > 0);
ALTER TABLE orgs ADD COLUMN invoice_title TEXT NOT NULL DEFAULT '';
ALTER TABLE orgs ADD COLUMN tax_id TEXT NOT NULL DEFAULT '';
CREATE INDEX ledger_txns_kind_created ON ledger_txns (kind, created_at);

-- +goose Down
DROP INDEX ledger_txns_kind_created;
ALTER TABLE orgs DROP COLUMN tax_id;
ALTER TABLE orgs DROP COLUMN invoice_title;
ALTER TABLE orgs DROP COLUMN hourly_cap_fen;
