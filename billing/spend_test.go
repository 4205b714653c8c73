package billing_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
)

func TestSpendLimits(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		w := &billing.Wallet{DB: db}
		// 2026-12-15 12:00 Shanghai.
		now := time.Date(2026, 12, 15, 4, 0, 0, 0, time.UTC)
		charge := func(org, user, fen int64, at time.Time) {
			t.Helper()
			err := db.Tx(ctx, func(tx *gorm.DB) error {
				return ledger.Post(tx, &ledger.LedgerTxn{Kind: billing.ChargeKind, CreatedBy: &user, CreatedAt: at},
					ledger.Leg{Kind: ledger.AccWallet, OrgID: org, AmountFen: -fen},
					ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: 99, AmountFen: fen})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, 1, 1_000_000, "promo_credit", "test", nil, nil, now.AddDate(0, -1, 0))
		}); err != nil {
			t.Fatal(err)
		}
		budget, capFen, hourly := int64(50_000), int64(20_000), int64(10_000)
		lab := &models.Org{ID: 1, Kind: models.OrgLab, MonthlyBudgetFen: &budget, MemberCapFen: &capFen}
		charge(1, 7, 30_000, now.AddDate(0, -1, 0)) // last month: does not count
		charge(1, 7, 15_000, now.Add(-48*time.Hour))
		charge(1, 8, 30_000, now.Add(-24*time.Hour))
		check := func(org *models.Org, user, fen int64) string {
			err := w.CheckSpend(ctx, org, user, fen, 0, now)
			if e, ok := apperr.As(err); ok {
				return e.Key
			}
			if err != nil {
				t.Fatal(err)
			}
			return ""
		}
		// Member 7 spent ¥150 of a ¥200 cap; the lab ¥450 of ¥500.
		if k := check(lab, 7, 5_000); k != "" {
			t.Errorf("within every limit: %s", k)
		}
		if k := check(lab, 7, 5_001); k != "err.limit_budget" {
			t.Errorf("over the lab's budget: %q", k)
		}
		budget = 100_000
		if k := check(lab, 7, 5_001); k != "err.limit_member" {
			t.Errorf("over the member's cap: %q", k)
		}
		team := &models.Org{ID: 1, Kind: models.OrgTeam, HourlyCapFen: &hourly}
		charge(1, 7, 9_000, now.Add(-30*time.Minute))
		if k := check(team, 7, 1_000); k != "" {
			t.Errorf("hourly cap reached exactly: %q", k)
		}
		if k := check(team, 7, 1_001); k != "err.limit_hourly" {
			t.Errorf("over the hourly cap: %q", k)
		}
		if k := check(&models.Org{ID: 1, Kind: models.OrgTeam}, 7, 900_000); k != "" {
			t.Errorf("no limits: %q", k)
		}
	})
}
