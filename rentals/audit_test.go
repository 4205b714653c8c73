package rentals_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/audit"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/models"
)

// The audit log is append-only in the database itself: an UPDATE or a
// DELETE fails on both databases, whoever sends it.
func TestAuditLogIsAppendOnly(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			return audit.Record(ctx, tx, audit.WalletCredit, "org:1", audit.Fen(100), "test")
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.W.Exec(`UPDATE audit_log SET detail = 'changed'`).Error; err == nil {
			t.Error("an UPDATE of audit_log succeeded")
		}
		if err := db.W.Exec(`DELETE FROM audit_log`).Error; err == nil {
			t.Error("a DELETE from audit_log succeeded")
		}
		entries, total, err := db.AuditLog(ctx, models.AuditFilter{})
		if err != nil || total != 1 || entries[0].Detail != "test" {
			t.Fatalf("after the attempts: %+v %d %v", entries, total, err)
		}
	})
}

// An entry names the actor and address in the context (none: the
// system), commits and rolls back with its transaction, and the filters
// find it.
func TestAuditActorAndFilters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		admin := audit.WithActor(ctx, 42, "203.0.113.9")
		write := func(ctx context.Context, action, subject string) {
			t.Helper()
			if err := db.Tx(ctx, func(tx *gorm.DB) error { return audit.Record(ctx, tx, action, subject, nil, "") }); err != nil {
				t.Fatal(err)
			}
		}
		write(admin, audit.OrgApproved, "org:7")
		write(ctx, audit.PayoutCreated, "payout:1")
		write(audit.AsSystem(admin), audit.TopupConfirmed, "topup:3")
		write(admin, audit.PayoutPaid, "payout:1")
		// A change that rolls back leaves no entry.
		_ = db.Tx(admin, func(tx *gorm.DB) error {
			if err := audit.Record(admin, tx, audit.RoleChanged, "org:7", nil, ""); err != nil {
				return err
			}
			return gorm.ErrInvalidData
		})

		all, total, err := db.AuditLog(ctx, models.AuditFilter{})
		if err != nil || total != 4 {
			t.Fatalf("all: %d %v", total, err)
		}
		if all[0].Action != audit.PayoutPaid {
			t.Errorf("newest first: %+v", all[0])
		}
		byAction := func(f models.AuditFilter) []models.AuditEntry {
			t.Helper()
			es, n, err := db.AuditLog(ctx, f)
			if err != nil || (f.Page == 0 && int(n) != len(es)) {
				t.Fatalf("%+v: %d %d %v", f, n, len(es), err)
			}
			return es
		}
		if es := byAction(models.AuditFilter{Actor: "42"}); len(es) != 2 || es[0].ActorIP != "203.0.113.9" || *es[0].ActorID != 42 {
			t.Errorf("by actor: %+v", es)
		}
		if es := byAction(models.AuditFilter{Actor: "system"}); len(es) != 2 || es[0].ActorID != nil || es[0].ActorIP != "" {
			t.Errorf("system: %+v", es)
		}
		if es := byAction(models.AuditFilter{Action: "payout."}); len(es) != 2 {
			t.Errorf("payout.*: %+v", es)
		}
		if es := byAction(models.AuditFilter{Action: audit.OrgApproved, Subject: "org:7"}); len(es) != 1 {
			t.Errorf("org.approved on org:7: %+v", es)
		}
		if es := byAction(models.AuditFilter{From: time.Now().Add(time.Hour)}); len(es) != 0 {
			t.Errorf("from the future: %+v", es)
		}
		if es := byAction(models.AuditFilter{Actor: "'; DROP TABLE audit_log; --"}); len(es) != 0 {
			t.Errorf("a malformed actor: %+v", es)
		}
		if es := byAction(models.AuditFilter{Page: 2, PerPage: 3}); len(es) != 1 {
			t.Errorf("page 2 of 3: %+v", es)
		}
		if es := byAction(models.AuditFilter{Page: -5, PerPage: 100000}); len(es) != 4 {
			t.Errorf("clamped paging: %+v", es)
		}
	})
}

// Verification and money movements made by people are audited with the
// person and their address, in the same transaction as the change.
func TestReviewAndBankTransferAreAudited(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPayoutFixture(t, db)
		admin := f.user("ops@suanli.test", true)
		actx := audit.WithActor(f.ctx, admin.ID, "198.51.100.7")
		pending, _ := f.provider(false)
		if err := f.svc.Review(actx, admin, *pending.OrgID, true, ""); err != nil {
			t.Fatal(err)
		}
		es := f.audits(audit.OrgApproved)
		if len(es) != 1 || es[0].Subject != "org:"+itoa(*pending.OrgID) || es[0].ActorID == nil || *es[0].ActorID != admin.ID || es[0].ActorIP != "198.51.100.7" {
			t.Errorf("org.approved: %+v", es)
		}

		w := &billing.Wallet{DB: db}
		top, _, err := w.StartTopup(f.ctx, f.slaFixture.user, f.org.ID, 50_000, models.MethodBank, "en")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.ConfirmBankTransfer(actx, admin, top.ID, 49_990); err != nil {
			t.Fatal(err)
		}
		es = f.audits(audit.TopupConfirmed)
		if len(es) != 1 || es[0].Subject != "topup:"+itoa(top.ID) || es[0].AmountFen == nil || *es[0].AmountFen != 49_990 || *es[0].ActorID != admin.ID {
			t.Errorf("topup.confirmed: %+v", es)
		}
		// A second confirmation changes nothing and audits nothing.
		_ = w.ConfirmBankTransfer(actx, admin, top.ID, 49_990)
		if n := len(f.audits(audit.TopupConfirmed)); n != 1 {
			t.Errorf("%d topup.confirmed entries", n)
		}
	})
}
