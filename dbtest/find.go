package dbtest

import (
	"bytes"
	"database/sql"
	"fmt"
	"testing"

	"suanli/models"
)

// Find returns where any of needles occurs in the database: "table.column"
// of every cell (of every table, River's included) whose bytes contain
// one, as the database returns them in text. A test of what must never be
// stored — a password in plaintext — asserts it finds nothing.
func Find(tb testing.TB, db *models.DB, needles ...[]byte) []string {
	tb.Helper()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`
	if db.Dialect == "postgres" {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`
	}
	var tables []string
	if err := db.W.Raw(q).Scan(&tables).Error; err != nil {
		tb.Fatalf("listing the tables: %v", err)
	}
	if len(tables) < 10 {
		tb.Fatalf("only %d tables: %v", len(tables), tables)
	}
	var found []string
	for _, table := range tables {
		found = append(found, findIn(tb, cmpOr(db.ReadSQL, db.SQL), table, needles)...)
	}
	return found
}

func findIn(tb testing.TB, conn *sql.DB, table string, needles [][]byte) []string {
	tb.Helper()
	rows, err := conn.Query(fmt.Sprintf(`SELECT * FROM %q`, table))
	if err != nil {
		tb.Fatalf("reading %s: %v", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		tb.Fatal(err)
	}
	cells := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range cells {
		ptrs[i] = &cells[i]
	}
	seen := map[string]bool{}
	var found []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			tb.Fatalf("reading %s: %v", table, err)
		}
		for i, c := range cells {
			for _, n := range needles {
				if where := table + "." + cols[i]; len(n) > 0 && bytes.Contains(c, n) && !seen[where] {
					seen[where] = true
					found = append(found, where)
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		tb.Fatalf("reading %s: %v", table, err)
	}
	return found
}

// cmpOr is a unless it is nil, else b.
func cmpOr(a, b *sql.DB) *sql.DB {
	if a != nil {
		return a
	}
	return b
}
