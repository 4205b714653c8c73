package migrations

import (
	"context"
	"database/sql"

	"github.com/riverqueue/river/rivermigrate"
)

// UpTo applies River's migrations and ours up to version, so a test can
// write the rows an older version left and then upgrade them.
func UpTo(ctx context.Context, dialect string, db *sql.DB, version int64) error {
	rm, err := riverMigrator(dialect, db)
	if err != nil {
		return err
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	p, err := provider(dialect, db)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}
