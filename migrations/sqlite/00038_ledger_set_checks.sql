-- +goose Up
-- The PostgreSQL migration of this number checks ledger entries'
-- references once per statement instead of row by row, and refuses
-- deletes of ledger rows. SQLite keeps its foreign keys (checked inside
-- the process, where they cost little; they also refuse changing an id
-- that entries name) and gets the same rule on deletes.
-- +goose StatementBegin
CREATE TRIGGER ledger_accounts_kept BEFORE DELETE ON ledger_accounts
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its rows: DELETE on ledger_accounts refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_txns_kept BEFORE DELETE ON ledger_txns
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its rows: DELETE on ledger_txns refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_entries_kept BEFORE DELETE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its rows: DELETE on ledger_entries refused'); END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER ledger_entries_kept;
DROP TRIGGER ledger_txns_kept;
DROP TRIGGER ledger_accounts_kept;
