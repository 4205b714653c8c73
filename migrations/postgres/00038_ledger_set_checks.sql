-- +goose Up
-- Issue 20, the meter at scale: a foreign key is checked row by row, a
-- trigger per row that looks the referenced row up and locks it. The
-- meter writes ~270,000 ledger entries a minute at 100,000 running
-- rentals, in a few statements, and those two checks per entry cost more
-- than the inserts themselves. The same rule is now checked once per
-- statement, as two anti-joins over the statement's new rows.
--
-- A foreign key also keeps a referenced row from being deleted, or its
-- id changed, while entries name it. Rows of the ledger are never
-- deleted, and now cannot be: not its accounts and transactions, nor its
-- entries, whose sums are the accounts' cached balances; and the ids of
-- accounts and transactions cannot change.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_txn_id_fkey;
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_account_id_fkey;

-- +goose StatementBegin
CREATE FUNCTION ledger_entries_refs_exist() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_entries e WHERE NOT EXISTS (SELECT 1 FROM ledger_accounts a WHERE a.id = e.account_id)) THEN
        RAISE EXCEPTION 'ledger entry names a ledger account that does not exist'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'ledger_entries';
    END IF;
    IF EXISTS (SELECT 1 FROM new_entries e WHERE NOT EXISTS (SELECT 1 FROM ledger_txns t WHERE t.id = e.txn_id)) THEN
        RAISE EXCEPTION 'ledger entry names a ledger transaction that does not exist'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'ledger_entries';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER ledger_entries_refs_inserted AFTER INSERT ON ledger_entries
REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_refs_exist();
CREATE TRIGGER ledger_entries_refs_updated AFTER UPDATE ON ledger_entries
REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_refs_exist();

-- +goose StatementBegin
CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the ledger keeps its rows: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END
$$;

CREATE FUNCTION ledger_ids_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id THEN
        RAISE EXCEPTION 'the ledger keeps its ids: % of % refused', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER ledger_accounts_kept BEFORE DELETE OR TRUNCATE ON ledger_accounts
FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_txns_kept BEFORE DELETE OR TRUNCATE ON ledger_txns
FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_entries_kept BEFORE DELETE OR TRUNCATE ON ledger_entries
FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_accounts_ids BEFORE UPDATE OF id ON ledger_accounts
FOR EACH ROW EXECUTE FUNCTION ledger_ids_fixed();
CREATE TRIGGER ledger_txns_ids BEFORE UPDATE OF id ON ledger_txns
FOR EACH ROW EXECUTE FUNCTION ledger_ids_fixed();

-- +goose Down
DROP TRIGGER ledger_txns_ids ON ledger_txns;
DROP TRIGGER ledger_accounts_ids ON ledger_accounts;
DROP FUNCTION ledger_ids_fixed();
DROP TRIGGER ledger_entries_kept ON ledger_entries;
DROP TRIGGER ledger_txns_kept ON ledger_txns;
DROP TRIGGER ledger_accounts_kept ON ledger_accounts;
DROP FUNCTION ledger_append_only();
DROP TRIGGER ledger_entries_refs_updated ON ledger_entries;
DROP TRIGGER ledger_entries_refs_inserted ON ledger_entries;
DROP FUNCTION ledger_entries_refs_exist();
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_txn_id_fkey FOREIGN KEY (txn_id) REFERENCES ledger_txns(id);
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_account_id_fkey FOREIGN KEY (account_id) REFERENCES ledger_accounts(id);
