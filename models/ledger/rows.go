package ledger

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// rows is a set of rows that one statement reads as a table named v, so
// that a statement of any size binds a few parameters: on PostgreSQL a
// column is one array literal (pgArray), unnested; on SQLite the rows are
// one JSON array of arrays, read with json_each. The set-based ledger
// writes (a meter batch's claims, transactions, entries and balances) are
// built on it.
type rows struct {
	names, types []string // column names and PostgreSQL types (bigint, text, timestamptz)
	cols         [][]any  // one slice per column: int64, *int64, string or time.Time
	n            int
}

// newRows starts a row set of the columns, given as "name type" pairs.
func newRows(cols ...string) *rows {
	r := &rows{}
	for _, c := range cols {
		name, typ, _ := strings.Cut(c, " ")
		r.names, r.types = append(r.names, name), append(r.types, typ)
	}
	r.cols = make([][]any, len(r.names))
	return r
}

// add appends a row, a value per column in order.
func (r *rows) add(vals ...any) {
	for i, v := range vals {
		r.cols[i] = append(r.cols[i], v)
	}
	r.n++
}

// each runs stmt with the WITH clause that names the rows v (columns as
// named) and its arguments, to be placed first.
func (r *rows) each(tx *gorm.DB, stmt func(with string, args []any) error) error {
	if r.n == 0 {
		return nil
	}
	names := strings.Join(r.names, ", ")
	if tx.Dialector.Name() == "postgres" {
		args := make([]any, len(r.cols))
		casts := make([]string, len(r.cols))
		for i, col := range r.cols {
			args[i] = pgArray(col)
			casts[i] = "?::" + r.types[i] + "[]"
		}
		return stmt("WITH v("+names+") AS (SELECT * FROM unnest("+strings.Join(casts, ", ")+")) ", args)
	}
	// SQLite: the rows as one JSON parameter, read with json_each. A VALUES
	// list of thousands of rows cost more to prepare than to run.
	data := make([][]any, r.n)
	sel := make([]string, len(r.cols))
	for i, col := range r.cols {
		sel[i] = fmt.Sprintf("value ->> %d", i)
		for j, v := range col {
			if i == 0 {
				data[j] = make([]any, len(r.cols))
			}
			if t, ok := v.(time.Time); ok {
				v = t.Format(sqliteTime) // as the driver writes a bound time
			}
			data[j][i] = v
		}
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return stmt("WITH v("+names+") AS (SELECT "+strings.Join(sel, ", ")+" FROM json_each(?)) ", []any{string(b)})
}

// updateTarget is the table that an UPDATE ... FROM v changes: on SQLite
// NOT INDEXED, so that it reads v once and finds each row by its id
// (without statistics it would rather walk an index of the table and
// read all of v for each row).
func updateTarget(tx *gorm.DB, table string) string {
	if tx.Dialector.Name() == "sqlite" {
		return table + " NOT INDEXED"
	}
	return table
}

// sqliteTime is how the SQLite driver (mattn/go-sqlite3) writes a bound
// time, which the JSON rows write the same way: the meter's claims
// compare billed_until with the value read.
const sqliteTime = "2006-01-02 15:04:05.999999999-07:00"

// arrayEscaper escapes a text element of an array literal, which is quoted.
var arrayEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// pgArray writes a column as a PostgreSQL array literal: bound as text,
// cast to the column's array type, it is one parameter however many rows.
// (Bound as a binary array, through pgx's reflection, it took more of the
// meter's time here than writing and parsing the text: 0.4 s more client
// CPU a 100,000-rental pass, and no less server CPU.)
func pgArray(col []any) string {
	buf := make([]byte, 0, 2+len(col)*8)
	var lastTime time.Time
	var lastText string
	buf = append(buf, '{')
	for i, v := range col {
		if i > 0 {
			buf = append(buf, ',')
		}
		switch v := v.(type) {
		case int64:
			buf = strconv.AppendInt(buf, v, 10)
		case *int64:
			if v == nil {
				buf = append(buf, "NULL"...)
			} else {
				buf = strconv.AppendInt(buf, *v, 10)
			}
		case string:
			buf = append(buf, '"')
			buf = append(buf, arrayEscaper.Replace(v)...)
			buf = append(buf, '"')
		case time.Time:
			// Microseconds, cut as pgx cuts a bound time.Time. A column
			// mostly repeats one time (when its rows were made).
			if lastText == "" || !v.Equal(lastTime) {
				lastTime, lastText = v, v.UTC().Truncate(time.Microsecond).Format(`"2006-01-02T15:04:05.999999Z07:00"`)
			}
			buf = append(buf, lastText...)
		default:
			panic(fmt.Sprintf("ledger: no array literal for %T", v))
		}
	}
	return string(append(buf, '}'))
}
