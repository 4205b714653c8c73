// Package changelog reads where the database says what changed (the
// triggers of migration 00031): on SQLite the change_log table, which one
// poller per process reads in id order; on PostgreSQL the suanli_changes
// channel, which one connection per process LISTENs to. Package
// changefeed hands what it reads to the pages that wait on it.
package changelog

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"suanli/models"
)

// Channel is the PostgreSQL channel the triggers NOTIFY, with payloads
// "<topic>:<id>".
const Channel = "suanli_changes"

// Change is one row of change_log: topic and RefID name what changed.
type Change struct {
	ID    int64
	Topic string
	RefID int64
}

// Latest returns the largest id change_log ever gave a row (0 before the
// first; pruned rows count, so the next row's id follows it): a poller
// starting now reads what comes after it.
func Latest(ctx context.Context, db *models.DB) (int64, error) {
	var ids []int64
	if err := db.R.WithContext(ctx).Raw("SELECT seq FROM sqlite_sequence WHERE name = 'change_log'").Scan(&ids).Error; err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return ids[0], nil
}

// After returns up to limit rows with ids above after, in id order (which
// is commit order: SQLite serialises writers). One statement.
func After(ctx context.Context, db *models.DB, after int64, limit int) ([]Change, error) {
	var cs []Change
	err := db.R.WithContext(ctx).Raw("SELECT id, topic, ref_id FROM change_log WHERE id > ? ORDER BY id LIMIT ?", after, limit).Scan(&cs).Error
	return cs, err
}

// Prune deletes the rows up to id upTo (what the caller's poller has
// read) that are older than keep by SQLite's own clock (the triggers
// stamp created_at with it). Another process's poller on the same file
// that had not read them yet sees a gap in the ids.
func Prune(ctx context.Context, db *models.DB, upTo int64, keep time.Duration) error {
	return db.W.WithContext(ctx).Exec("DELETE FROM change_log WHERE id <= ? AND created_at < CAST(strftime('%s', 'now') AS INTEGER) - ?",
		upTo, int64(keep/time.Second)).Error
}

// Listen holds one connection of its own to db's PostgreSQL database (a
// pool's connections are shared and reset), LISTENs on Channel, calls
// listening once it does, then hands every payload to receive until ctx
// ends or the connection fails; it returns the error. After ping without
// a notification it pings the server, so that a connection that died
// silently is noticed (one statement per ping, per process).
func Listen(ctx context.Context, db *models.DB, ping time.Duration, listening func(), receive func(payload string)) error {
	conn, err := pgx.ConnectConfig(ctx, db.PGX.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{Channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		wctx, cancel := context.WithTimeout(ctx, ping)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			receive(n.Payload)
		case ctx.Err() == nil && pgconn.Timeout(err):
			if err := conn.Ping(ctx); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// Parse splits a payload "<topic>:<id>".
func Parse(payload string) (topic string, id int64, ok bool) {
	topic, rest, found := strings.Cut(payload, ":")
	if !found || topic == "" {
		return "", 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return topic, id, true
}

// Session returns the id under which the deletion of token's session
// row is reported (topic "session": the rowid on SQLite, hashtext(token)
// on PostgreSQL, as migration 00031's trigger names it) and the
// session's expiry; found is false when no such session is stored. One
// statement.
func Session(ctx context.Context, db *models.DB, token string) (id int64, expiry time.Time, found bool, err error) {
	q := "SELECT rowid AS id, expiry FROM sessions WHERE token = ?"
	if db.Dialect == "postgres" {
		q = "SELECT hashtext(token) AS id, expiry FROM sessions WHERE token = ?"
	}
	var rows []struct {
		ID     int64
		Expiry time.Time
	}
	if err := db.W.WithContext(ctx).Raw(q, token).Scan(&rows).Error; err != nil {
		return 0, time.Time{}, false, err
	}
	if len(rows) == 0 {
		return 0, time.Time{}, false, nil
	}
	return rows[0].ID, rows[0].Expiry, true, nil
}
