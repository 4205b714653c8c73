package workers_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
	"suanli/providers"
	"suanli/workers"
)

// The monthly schedule is the 1st at 02:00 in Shanghai, whatever the
// month's length.
func TestPayoutScheduleIsMonthly(t *testing.T) {
	sh := func(y int, m time.Month, d, h, min int) time.Time {
		return time.Date(y, m, d, h, min, 0, 0, pricing.Shanghai)
	}
	for _, c := range []struct{ from, want time.Time }{
		{sh(2026, 11, 30, 19, 44), sh(2026, 12, 1, 2, 0)},
		{sh(2026, 12, 1, 1, 59), sh(2026, 12, 1, 2, 0)},
		{sh(2026, 12, 1, 2, 0), sh(2027, 1, 1, 2, 0)},
		{sh(2027, 1, 31, 23, 0), sh(2027, 2, 1, 2, 0)},
		// 1 March 01:00 in Shanghai is still February in UTC.
		{sh(2027, 3, 1, 1, 0).UTC(), sh(2027, 3, 1, 2, 0)},
	} {
		if got := workers.PayoutSchedule.Next(c.from); !got.Equal(c.want) {
			t.Errorf("after %v: %v, want %v", c.from, got, c.want)
		}
	}
	if got := providers.PayoutPeriod(sh(2027, 1, 1, 2, 0)); got != "2026-12" {
		t.Errorf("period paid on 1 January: %s", got)
	}
}

// A payout run inserted on demand is worked on both databases: the
// verified provider's payable becomes a payout.
func TestPayoutsJobRunsOnDemand(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		svc := &accounts.Service{DB: db, BaseURL: "http://suanli.test"}
		u, err := svc.CreateUser(ctx, "owner@provider.example", "provider-pass-2026", "Owner", false)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := (&providers.Service{DB: db}).CreateVerified(ctx, u, "Tianfu GPU")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			return ledger.Post(tx, &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: "test earnings", CreatedAt: time.Now()},
				ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -10_000},
				ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: acc.Provider.ID, AmountFen: 8_800},
				ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: 1_200})
		}); err != nil {
			t.Fatal(err)
		}
		q, err := workers.New(db, workers.Options{Work: true, AvailabilityEvery: time.Hour, FetchPoll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer q.Stop(ctx)
		period := providers.PayoutPeriod(time.Now())
		if _, err := q.Inserter.Insert(ctx, workers.PayoutsArgs{Period: period}, nil); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(30 * time.Second)
		for {
			ps, err := ledger.PayoutsOfProvider(ctx, db, acc.Provider.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) == 1 {
				if ps[0].AmountFen != 8_800 || ps[0].Period != period || ps[0].Method != models.PayoutBank {
					t.Errorf("payout: %+v", ps[0])
				}
				return
			}
			select {
			case <-deadline:
				t.Fatal("no payout from the job")
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}
