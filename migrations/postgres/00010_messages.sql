-- +goose Up
-- What the platform writes for people to read (ledger memos, timeline
-- details, audit details, GPU check reasons, incident reasons, why a
-- rental failed) is kept as a message: a catalogue key and its arguments
-- as JSON (locales.Msg), rendered in each reader's language. The English
-- text columns stay as they were, for the API, the CSVs and the rows
-- written before this migration (their message is '').
ALTER TABLE ledger_txns ADD COLUMN memo_msg TEXT NOT NULL DEFAULT '';
ALTER TABLE rental_events ADD COLUMN detail_msg TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN detail_msg TEXT NOT NULL DEFAULT '';
ALTER TABLE gpus ADD COLUMN reasons_msg TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN reasons_msg TEXT NOT NULL DEFAULT '';
ALTER TABLE rentals ADD COLUMN failure_msg TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE rentals DROP COLUMN failure_msg;
ALTER TABLE incidents DROP COLUMN reasons_msg;
ALTER TABLE gpus DROP COLUMN reasons_msg;
ALTER TABLE audit_log DROP COLUMN detail_msg;
ALTER TABLE rental_events DROP COLUMN detail_msg;
ALTER TABLE ledger_txns DROP COLUMN memo_msg;
