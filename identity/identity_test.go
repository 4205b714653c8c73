package identity_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/config"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/secrets"
)

// Valid resident ID numbers (cnid's test numbers) and mobile numbers.
const (
	idA = "510107199003071236"
	idB = "440304198812125416"
	idC = "11010519491231002X"
)

// clock is a test's clock, installed as the database's.
type clock struct{ now time.Time }

func (c *clock) advance(d time.Duration) { c.now = c.now.Add(d) }

// rig is a service over a database with a clock the test moves.
type rig struct {
	t     *testing.T
	db    *models.DB
	svc   *identity.Service
	clock *clock
	ctx   context.Context
}

func newKey(t *testing.T) *secrets.Key {
	t.Helper()
	k, err := secrets.ParseKey(secrets.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newRig(t *testing.T, db *models.DB, keys ...*secrets.Key) *rig {
	t.Helper()
	c := &clock{now: time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)}
	db.Now = func() time.Time { return c.now }
	if len(keys) == 0 {
		keys = []*secrets.Key{newKey(t)}
	}
	ring := secrets.NewRing(config.PIIPurpose, keys[0], keys[1:]...)
	return &rig{t: t, db: db, clock: c, ctx: context.Background(),
		svc: &identity.Service{DB: db, Ring: ring, Mode: config.RealNameRequired}}
}

// user makes a user with a verified email and a personal organisation.
func (r *rig) user(email string) *models.User {
	r.t.Helper()
	u, err := (&accounts.Service{DB: r.db}).CreateUser(r.ctx, email, "violet-kettle-1984", "", false)
	if err != nil {
		r.t.Fatal(err)
	}
	return u
}

func (r *rig) admin(email string) *models.User {
	r.t.Helper()
	u, err := (&accounts.Service{DB: r.db}).CreateUser(r.ctx, email, "violet-kettle-1984", "Admin", true)
	if err != nil {
		r.t.Fatal(err)
	}
	return u
}

func input(id, phone, ip string) identity.IndividualInput {
	return identity.IndividualInput{Kind: "individual", Name: "张伟", IDNumber: id, Phone: phone, Consent: true, IP: ip}
}

var sixDigits = regexp.MustCompile(`\b\d{6}\b`)

// code is the code of the newest message the SMS outbox holds for phone.
func (r *rig) code(phone string) string {
	r.t.Helper()
	ms, _, err := identitystore.OutboxPage(r.ctx, r.db, phone, 1, 1)
	if err != nil || len(ms) == 0 {
		r.t.Fatalf("no SMS to %s: %v", phone, err)
	}
	c := sixDigits.FindString(ms[0].Body)
	if c == "" {
		r.t.Fatalf("no code in %q", ms[0].Body)
	}
	return c
}

// verify starts and confirms u's verification with id and phone.
func (r *rig) verify(u *models.User, id, phone string) {
	r.t.Helper()
	if _, err := r.svc.StartIndividual(r.ctx, u, input(id, phone, "")); err != nil {
		r.t.Fatalf("start: %v", err)
	}
	if v, err := r.svc.ConfirmIndividual(r.ctx, u, r.code(phone)); err != nil || v.Status != identitystore.Verified {
		r.t.Fatalf("confirm: %+v %v", v, err)
	}
}

func (r *rig) status(u *models.User) string {
	r.t.Helper()
	st, err := identitystore.StatusOf(r.ctx, r.db, u.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return st
}

// fieldsOf are the fields a refusal names (a form's problems or one error).
func fieldsOf(err error) []string {
	var fs apperr.Fields
	if errors.As(err, &fs) {
		var out []string
		for _, f := range fs {
			out = append(out, f.Field)
		}
		return out
	}
	if ae, ok := apperr.As(err); ok {
		return []string{ae.Field}
	}
	return nil
}

func auditCount(t *testing.T, db *models.DB, action string) []models.AuditEntry {
	t.Helper()
	es, _, err := db.AuditLog(context.Background(), models.AuditFilter{Action: action})
	if err != nil {
		t.Fatal(err)
	}
	return es
}
