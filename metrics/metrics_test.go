package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/metrics"
	"suanli/models"
)

// The ledger volume counts a transaction once it has settled (created
// LedgerSettle ago), exactly once, and only the new transactions on each
// reading.
func TestMetricsLedgerVolumeCountsSettledTransactionsOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		now := time.Now().UTC()
		db.Now = func() time.Time { return now }
		u, err := (&accounts.Service{DB: db}).CreateUser(ctx, "ledger@example.com", "ledger-pass-2026", "", false)
		if err != nil {
			t.Fatal(err)
		}
		orgs, _ := db.OrgsOfUser(ctx, u.ID)
		credit := func(fen int64, at time.Time) {
			t.Helper()
			if err := db.Tx(ctx, func(tx *gorm.DB) error {
				return billing.CreditPromo(tx, orgs[0].Org.ID, fen, "promo_credit", "metrics", nil, nil, at)
			}); err != nil {
				t.Fatal(err)
			}
		}
		m := &metrics.Collector{DB: db, CacheFor: time.Nanosecond, LedgerSettle: 2 * time.Minute}
		reg := prometheus.NewRegistry()
		reg.MustRegister(m)
		volume := func() float64 {
			t.Helper()
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "suanli_ledger_fen_total" {
					for _, s := range mf.GetMetric() {
						if s.GetLabel()[0].GetValue() == "promo_credit" {
							return s.GetCounter().GetValue()
						}
					}
				}
			}
			return 0
		}
		credit(100, now.Add(-5*time.Minute))
		credit(20, now.Add(-30*time.Second)) // not settled yet
		if v := volume(); v != 100 {
			t.Fatalf("volume %v, want 100 (the settled credit only)", v)
		}
		if v := volume(); v != 100 {
			t.Fatalf("a second reading %v, want 100 again", v)
		}
		now = now.Add(3 * time.Minute)
		credit(3, now)
		if v := volume(); v != 120 {
			t.Fatalf("volume %v after the second credit settled, want 120", v)
		}
		now = now.Add(3 * time.Minute)
		if v := volume(); v != 123 {
			t.Fatalf("volume %v, want 123", v)
		}
	})
}
