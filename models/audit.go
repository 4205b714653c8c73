package models

import (
	"context"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/locales"
)

// actorKey is the context key under which the acting user travels.
type actorKey struct{}

// Actor is who is acting in a request: a signed-in user and the address the
// request came from. Workers act with no Actor (the system).
type Actor struct {
	UserID int64
	IP     string
}

// WithActor returns ctx carrying the acting user and their address, so that
// audit entries written anywhere below know who did it.
func WithActor(ctx context.Context, userID int64, ip string) context.Context {
	return context.WithValue(ctx, actorKey{}, Actor{UserID: userID, IP: ip})
}

// ActorFrom returns the acting user in ctx, if any.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok && a.UserID != 0
}

// AppendAudit appends one entry to the audit log in tx, so that it commits
// or rolls back with the change it records. The actor and address come
// from ctx (none: the system). detail is English (the CSV's); msg, when
// given, is the same as a message for the audit page. The table refuses
// updates and deletes.
func AppendAudit(ctx context.Context, tx *gorm.DB, now time.Time, action, subject string, amountFen *int64, detail string, msg ...locales.Msg) error {
	e := AuditEntry{At: now.UTC(), Action: action, Subject: subject, AmountFen: amountFen, Detail: detail}
	if len(msg) > 0 {
		e.DetailMsg = msg[0]
	}
	if a, ok := ActorFrom(ctx); ok {
		id := a.UserID
		e.ActorID = &id
		e.ActorIP = a.IP
	}
	return tx.Create(&e).Error
}

// AuditFilter narrows the audit log. Action matches a whole action or, when
// it ends in ".", every action under that prefix ("payout."); Subject is an
// exact subject ("org:12"); Actor is a user id, or "system" for entries
// with no actor. Zero From/To leave that end open (To is exclusive).
type AuditFilter struct {
	Action, Subject, Actor string
	From, To               time.Time
	Page, PerPage          int
}

// AuditLog returns one page of the audit log, newest first, and how many
// entries match in all. A malformed Actor matches nothing rather than
// failing, so that no query string can cause an error.
func (db *DB) AuditLog(ctx context.Context, f AuditFilter) ([]AuditEntry, int64, error) {
	q := db.R.WithContext(ctx).Model(&AuditEntry{})
	if a := strings.TrimSpace(f.Action); a != "" {
		if strings.HasSuffix(a, ".") {
			// substr rather than LIKE: no wildcard in a prefix to escape.
			q = q.Where("substr(action, 1, ?) = ?", len(a), a)
		} else {
			q = q.Where("action = ?", a)
		}
	}
	if s := strings.TrimSpace(f.Subject); s != "" {
		q = q.Where("subject = ?", s)
	}
	switch a := strings.TrimSpace(f.Actor); {
	case a == "":
	case strings.EqualFold(a, "system"):
		q = q.Where("actor_id IS NULL")
	default:
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return nil, 0, nil
		}
		q = q.Where("actor_id = ?", id)
	}
	if !f.From.IsZero() {
		q = q.Where("at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		q = q.Where("at < ?", f.To.UTC())
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	page, per := ClampPage(f.Page, f.PerPage, 500)
	var out []AuditEntry
	err := q.Order("at DESC, id DESC").Offset((page - 1) * per).Limit(per).Find(&out).Error
	return out, total, err
}
