package ledger_test

import (
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
)

// TestLedgerRefusesDanglingEntriesAndDeletes: an entry must name an
// existing account and transaction (on PostgreSQL checked once per
// statement since migration 00038, in place of row-by-row foreign keys:
// one bad row in a many-row insert fails the whole statement), no ledger
// row can be deleted, and the ids entries name cannot change.
func TestLedgerRefusesDanglingEntriesAndDeletes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		fund(t, db, 10_000, 1)
		var txn, acc int64
		if err := db.R.Raw("SELECT txn_id, account_id FROM ledger_entries ORDER BY id LIMIT 1").Row().Scan(&txn, &acc); err != nil {
			t.Fatal(err)
		}
		count := func() (n int64) {
			t.Helper()
			if err := db.R.Raw("SELECT COUNT(*) FROM ledger_entries").Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := count()
		now := time.Now().UTC()
		for name, rows := range map[string][][2]int64{
			"missing account":               {{txn, acc + 1_000_000}},
			"missing transaction":           {{txn + 1_000_000, acc}},
			"one bad row among good ones":   {{txn, acc}, {txn, acc}, {txn, acc + 1_000_000}, {txn, acc}},
			"missing both, among good ones": {{txn, acc}, {txn + 1_000_000, acc + 1_000_000}},
		} {
			q, args := "INSERT INTO ledger_entries (txn_id, account_id, amount_fen, created_at) VALUES ", []any{}
			for i, r := range rows {
				if i > 0 {
					q += ", "
				}
				q += "(?, ?, ?, ?)"
				// +1 and -1 alternate: the amount is not what is refused.
				args = append(args, r[0], r[1], int64(1-2*(i%2)), now)
			}
			if err := db.W.Exec(q, args...).Error; err == nil {
				t.Errorf("%s: the insert was accepted", name)
			}
			if n := count(); n != before {
				t.Fatalf("%s: %d entries after the refused insert, want %d", name, n, before)
			}
		}
		if err := db.W.Exec("UPDATE ledger_entries SET account_id = ? WHERE txn_id = ?", acc+1_000_000, txn).Error; err == nil {
			t.Error("an update naming a missing account was accepted")
		}
		for _, table := range []string{"ledger_entries", "ledger_txns", "ledger_accounts"} {
			if err := db.W.Exec("DELETE FROM " + table).Error; err == nil {
				t.Errorf("DELETE FROM %s was accepted", table)
			}
			if db.Dialect == "postgres" {
				if err := db.W.Exec("TRUNCATE " + table + " CASCADE").Error; err == nil {
					t.Errorf("TRUNCATE %s was accepted", table)
				}
			}
		}
		// A transaction and an account no entry names: no foreign key
		// refuses their deletion, the ledger's own rule does.
		if err := db.W.Exec("INSERT INTO ledger_txns (kind, memo, created_at) VALUES ('test', 'no entries', ?)", now).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Exec("INSERT INTO ledger_accounts (kind, org_id, balance_fen, created_at) VALUES ('wallet', 999, 0, ?)", now).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Exec("DELETE FROM ledger_txns WHERE memo = 'no entries'").Error; err == nil {
			t.Error("deleting a transaction without entries was accepted")
		}
		if err := db.W.Exec("DELETE FROM ledger_accounts WHERE org_id = 999").Error; err == nil {
			t.Error("deleting an account without entries was accepted")
		}
		// Nor can the id of an account or a transaction that entries name
		// change.
		if err := db.W.Exec("UPDATE ledger_accounts SET id = id + 1000000 WHERE id = ?", acc).Error; err == nil {
			t.Error("changing an account's id was accepted")
		}
		if err := db.W.Exec("UPDATE ledger_txns SET id = id + 1000000 WHERE id = ?", txn).Error; err == nil {
			t.Error("changing a transaction's id was accepted")
		}
		if n := count(); n != before {
			t.Fatalf("%d entries after the refused deletes, want %d", n, before)
		}
		balanced(t, db)
	})
}
