package models

import "context"

// VacuumInto writes a consistent copy of a SQLite database to path (an
// empty or missing file) while writers go on: SQLite's VACUUM INTO.
func (db *DB) VacuumInto(ctx context.Context, path string) error {
	_, err := db.SQL.ExecContext(ctx, `VACUUM INTO ?`, path)
	return err
}
