package rentals_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"suanli/billing"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
	"suanli/rentals"
)

// Meter benchmark fleet: running on-demand rentals, four per
// organisation.
const (
	benchRentalsPerOrg = 4
	// benchWalletFen funds each organisation for far more passes than a
	// benchmark runs, so every pass bills every rental in full.
	benchWalletFen = 100_000_000
)

// BenchmarkMeterPass10k times one meter pass (Rentals.Meter) over 10,000
// running on-demand rentals of 2,500 funded organisations without spending
// limits. Each iteration advances the clock by 60 s, so every pass bills
// every rental one minute, as the periodic meter job does. The target is
// at most 2 s per pass on each database.
func BenchmarkMeterPass10k(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchMeterPass(b, dbtest.SQLite(b), 10_000) })
	b.Run("postgres", func(b *testing.B) { benchMeterPass(b, dbtest.Postgres(b), 10_000) })
}

// BenchmarkMeterPass100k is BenchmarkMeterPass10k over 100,000 rentals of
// 25,000 organisations (issue 20: at most 5 s per pass on PostgreSQL). It
// reports the SQL statements a pass runs too.
func BenchmarkMeterPass100k(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchMeterPass(b, dbtest.SQLite(b), 100_000) })
	b.Run("postgres", func(b *testing.B) { benchMeterPass(b, dbtest.Postgres(b), 100_000) })
}

func benchMeterPass(b *testing.B, db *models.DB, benchRentals int) {
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Second)
	seedMeterFleet(b, db, start.Add(-time.Minute), benchRentals)
	stmts := countStatements(db)
	goCPU, pgCPU := processCPU(b), backendCPU(b, db)
	now := start
	db.Now = func() time.Time { return now }
	rentals := &rentals.Service{DB: db, Wallet: &billing.Wallet{DB: db}, Hub: fleet.NewHub()}

	passes := 0
	var fen int64
	for b.Loop() {
		res, err := rentals.Meter(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if res.Rentals != benchRentals || res.Stopped != 0 {
			b.Fatalf("pass %d billed %d rentals and stopped %d, want %d and 0", passes, res.Rentals, res.Stopped, benchRentals)
		}
		fen += res.Fen
		passes++
		now = now.Add(time.Minute)
	}
	b.ReportMetric(float64(benchRentals*passes)/b.Elapsed().Seconds(), "rentals/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(passes), "s/pass")
	b.ReportMetric(float64(stmts.Load())/float64(passes), "statements/pass")
	// CPU seconds, this process's and (on PostgreSQL) its backends': on a
	// busy machine they vary less than the time a pass takes.
	b.ReportMetric((processCPU(b)-goCPU).Seconds()/float64(passes), "go-cpu-s/pass")
	if db.Dialect == "postgres" {
		b.ReportMetric((backendCPU(b, db)-pgCPU).Seconds()/float64(passes), "pg-cpu-s/pass")
		// The share of the rentals' updates that were HOT (no new index
		// entries): unlike times, it does not depend on what else the
		// machine runs. Backends report their counts when idle, within
		// about 10 s.
		b.ReportMetric(hotShare(b, db, int64(passes*benchRentals)), "hot-%")
	}
	db.W.Config.Logger, db.R.Config.Logger = logger.Discard, logger.Discard

	// What was billed is in the ledger, and the ledger balances.
	var billed int64
	if err := db.R.Model(&models.Rental{}).Select("COALESCE(SUM(billed_fen), 0)").Scan(&billed).Error; err != nil {
		b.Fatal(err)
	}
	if billed != fen {
		b.Errorf("rentals billed %d fen, the passes reported %d", billed, fen)
	}
	if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) > 0 {
		b.Errorf("ledger after %d passes: %v %v", passes, err, problems[:min(len(problems), 5)])
	}
}

// hotShare is the percentage of the rentals' updates that PostgreSQL
// made HOT, once its statistics count at least updates of them (0 on
// SQLite).
func hotShare(b testing.TB, db *models.DB, updates int64) float64 {
	if db.Dialect != "postgres" {
		return 0
	}
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		var st struct{ Upd, Hot int64 }
		if err := db.R.Raw("SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'rentals'").Scan(&st).Error; err != nil {
			b.Fatal(err)
		}
		share := 100 * float64(st.Hot) / float64(max(st.Upd, 1))
		if st.Upd >= updates {
			return share
		}
		select {
		case <-tick.C:
		case <-deadline:
			b.Logf("PostgreSQL counted %d of the %d updates within 30 s: hot-%% is of those", st.Upd, updates)
			return share
		}
	}
}

// processCPU is this process's user and system CPU time so far.
func processCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU is the CPU time so far of the PostgreSQL backends connected
// to db's database (on this machine; zero elsewhere and on SQLite).
func backendCPU(b testing.TB, db *models.DB) time.Duration {
	if db.Dialect != "postgres" {
		return 0
	}
	var pids []int
	if err := db.R.Raw("SELECT pid FROM pg_stat_activity WHERE datname = current_database()").Scan(&pids).Error; err != nil {
		b.Fatal(err)
	}
	var sum time.Duration
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0
		}
		// utime and stime are fields 14 and 15, counted after the command
		// (in parentheses, which may hold spaces); in USER_HZ, 100 a second.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		sum += time.Duration(u+st) * 10 * time.Millisecond
	}
	return sum
}

// statementCounter counts the SQL statements gorm runs, through a logger
// installed on the database handles (the sessions and transactions made
// from them afterwards share it).
type statementCounter struct {
	logger.Interface
	n atomic.Int64
}

func (c *statementCounter) LogMode(logger.LogLevel) logger.Interface { return c }

func (c *statementCounter) Trace(context.Context, time.Time, func() (string, int64), error) {
	c.n.Add(1)
}

// countStatements installs a statement counter on db and returns its count.
func countStatements(db *models.DB) *atomic.Int64 {
	c := &statementCounter{Interface: logger.Discard}
	db.W.Config.Logger, db.R.Config.Logger = c, c
	return &c.n
}

// seedMeterFleet bulk-inserts the demo market, one owner and one funded
// wallet per organisation (one balanced promo-credit transaction) and
// benchRentals running on-demand rentals spread over the demo offers,
// billed up to billedUntil.
func seedMeterFleet(b testing.TB, db *models.DB, billedUntil time.Time, benchRentals int) {
	b.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		b.Fatal(err)
	}
	var offers []models.Offer
	if err := db.R.Where("demo").Order("id").Find(&offers).Error; err != nil || len(offers) == 0 {
		b.Fatalf("demo offers: %d %v", len(offers), err)
	}
	nOrgs := benchRentals / benchRentalsPerOrg
	at := billedUntil.Add(-time.Hour)
	err := db.Tx(ctx, func(tx *gorm.DB) error {
		users := make([]models.User, nOrgs)
		orgs := make([]models.Org, nOrgs)
		for i := range nOrgs {
			users[i] = models.User{Email: fmt.Sprintf("meter%05d@example.com", i), Name: "Meter", Lang: "zh-CN", PasswordHash: "-", EmailVerifiedAt: &at, CreatedAt: at}
			orgs[i] = models.Org{Kind: models.OrgTeam, Name: fmt.Sprintf("Meter %05d", i), Personal: true, Status: models.OrgActive, CreatedAt: at}
		}
		if err := tx.CreateInBatches(users, 500).Error; err != nil {
			return err
		}
		if err := tx.CreateInBatches(orgs, 500).Error; err != nil {
			return err
		}
		txn := ledger.LedgerTxn{Kind: "promo_credit", Memo: "meter benchmark funding", CreatedAt: at}
		if err := tx.Create(&txn).Error; err != nil {
			return err
		}
		accs := []ledger.LedgerAccount{{Kind: ledger.AccPromoCredit, BalanceFen: -int64(nOrgs) * benchWalletFen, CreatedAt: at}}
		for _, o := range orgs {
			accs = append(accs, ledger.LedgerAccount{Kind: ledger.AccWallet, OrgID: o.ID, BalanceFen: benchWalletFen, CreatedAt: at})
		}
		if err := tx.CreateInBatches(accs, 500).Error; err != nil {
			return err
		}
		entries := make([]ledger.LedgerEntry, len(accs))
		for i, a := range accs {
			entries[i] = ledger.LedgerEntry{TxnID: txn.ID, AccountID: a.ID, AmountFen: a.BalanceFen, CreatedAt: at}
		}
		if err := tx.CreateInBatches(entries, 500).Error; err != nil {
			return err
		}
		rs := make([]models.Rental, benchRentals)
		for i := range rs {
			o := offers[i%len(offers)]
			u := i / benchRentalsPerOrg
			rs[i] = models.Rental{OrgID: orgs[u].ID, UserID: users[u].ID, OfferID: o.ID, ProviderID: o.ProviderID, GPUs: 1,
				SLA: "standard", Term: pricing.OnDemand, Status: models.RentalRunning, SSHPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMeter meter",
				WorkspaceID: fmt.Sprintf("ws-meter-%05d", i), PricePerGPUHourFen: o.PricePerGPUHourFen, OffpeakPct: o.OffpeakDiscountPct,
				RunningSince: &at, BilledUntil: &billedUntil, CreatedAt: at, UpdatedAt: at}
		}
		return tx.CreateInBatches(rs, 500).Error
	})
	if err != nil {
		b.Fatalf("seed the meter fleet: %v", err)
	}
	if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) > 0 {
		b.Fatalf("ledger after seeding: %v %v", err, problems)
	}
	// PostgreSQL's planner needs statistics of the bulk-loaded tables, as
	// autovacuum gathers them in a running system within a minute.
	if db.Dialect == "postgres" {
		if err := db.W.Exec("ANALYZE").Error; err != nil {
			b.Fatal(err)
		}
	}
}
