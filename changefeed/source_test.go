package changefeed_test

import (
	"context"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/changefeed"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/changelog"
	"suanli/models/listing"
	"suanli/models/rentalstore"
	"suanli/models/supply"
)

// world is a seeded database with one rental of one organisation.
type world struct {
	db                   *models.DB
	userID, orgID, rent  int64
	volumeID, walletAcct int64
}

func newWorld(t *testing.T, db *models.DB) *world {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	u := &models.User{Email: "watcher@example.com", Name: "W", Lang: "en", CreatedAt: now}
	if err := models.InsertUser(db.W, u); err != nil {
		t.Fatal(err)
	}
	o := &models.Org{Kind: "team", Name: "W", Personal: true, Status: models.OrgActive, CreatedAt: now}
	if err := models.InsertOrg(db.W, o); err != nil {
		t.Fatal(err)
	}
	rows, _, err := listing.All(ctx, db)
	if err != nil || len(rows) == 0 {
		t.Fatalf("offers: %d, %v", len(rows), err)
	}
	of := rows[0].Offer
	r := &models.Rental{OrgID: o.ID, UserID: u.ID, OfferID: of.ID, ProviderID: of.ProviderID, GPUs: 1, SLA: "standard",
		Term: "on_demand", Status: models.RentalProvisioning, SSHPublicKey: "ssh-ed25519 AAAA", WorkspaceID: "ws-watch",
		PricePerGPUHourFen: 1000, CreatedAt: now, UpdatedAt: now}
	if err := rentalstore.InsertRental(db.W, r); err != nil {
		t.Fatal(err)
	}
	w := &world{db: db, userID: u.ID, orgID: o.ID, rent: r.ID}
	if err := db.W.Raw("INSERT INTO ledger_accounts (kind, org_id, balance_fen, created_at) VALUES ('wallet', ?, 0, ?) RETURNING id", o.ID, now).
		Scan(&w.walletAcct).Error; err != nil {
		t.Fatal(err)
	}
	return w
}

// otherProcess opens a second handle on db's database, as another
// process would.
func otherProcess(t *testing.T, db *models.DB) *models.DB {
	t.Helper()
	loc := ""
	if db.Dialect == "postgres" {
		loc = db.PGX.Config().ConnString()
	} else if err := db.SQL.QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&loc); err != nil {
		t.Fatal(err)
	}
	o, err := models.Open(context.Background(), db.Dialect, loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// run starts a feed on db and stops it when the test ends, failing if it
// does not stop.
func run(t *testing.T, db *models.DB) *changefeed.Feed {
	t.Helper()
	f := changefeed.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx, db, changefeed.Options{Poll: 20 * time.Millisecond}); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s of its context's end")
		}
	})
	select {
	case <-f.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the feed was not reading its source within 10s")
	}
	return f
}

func hear(t *testing.T, s *changefeed.Subscription, what string) {
	t.Helper()
	select {
	case <-s.C:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no change heard within 10s", what)
	}
}

func exec(t *testing.T, db *models.DB, sql string, args ...any) {
	t.Helper()
	if err := db.W.Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// A change committed by another process reaches this process's
// subscribers; the meter's writes (a rental's billing columns, a
// wallet's debit) reach nobody. Changes arrive in commit order, so once
// a later change is heard an earlier one would have been too.
func TestChangesFromAnotherProcessReachSubscribers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newWorld(t, db)
		f := run(t, db)
		other := otherProcess(t, db)
		rental := f.Subscribe(changefeed.Rental(w.rent))
		defer rental.Close()
		org := f.Subscribe(changefeed.Org(w.orgID))
		defer org.Close()
		user := f.Subscribe(changefeed.User(w.userID))
		defer user.Close()
		sentinel := func(what string) {
			t.Helper()
			exec(t, other, "UPDATE users SET session_epoch = session_epoch + 1 WHERE id = ?", w.userID)
			hear(t, user, what)
		}
		sentinel("a user's session epoch")
		pending(rental)
		pending(org)
		v0, ok := f.Version(changefeed.Rental(w.rent))
		if !ok {
			t.Fatal("a reading feed promised no version")
		}

		exec(t, other, "UPDATE rentals SET status = 'running' WHERE id = ?", w.rent)
		hear(t, rental, "the rental's status")
		hear(t, org, "a rental's status changes its organisation's rate")
		v1, _ := f.Version(changefeed.Rental(w.rent))
		if v1 == v0 {
			t.Errorf("the rental's version stayed %q after it changed", v1)
		}

		now := time.Date(2030, 1, 2, 4, 0, 0, 0, time.UTC)
		exec(t, other, "UPDATE rentals SET billed_fen = billed_fen + 5, billed_until = ?, carry_num = 7, updated_at = ? WHERE id = ?", now, now, w.rent)
		exec(t, other, "UPDATE ledger_accounts SET balance_fen = 0 WHERE id = ?", w.walletAcct)
		sentinel("after a meter pass")
		if pending(rental) || pending(org) {
			t.Error("a meter pass (billing columns, no credit) woke a subscriber")
		}
		if v, _ := f.Version(changefeed.Rental(w.rent)); v != v1 {
			t.Errorf("a meter pass moved the rental's version from %q to %q", v1, v)
		}

		exec(t, other, "INSERT INTO rental_events (rental_id, at, kind, detail) VALUES (?, ?, 'started', '')", w.rent, now)
		hear(t, rental, "an event on the rental's timeline")
		exec(t, other, "UPDATE ledger_accounts SET balance_fen = balance_fen + 100 WHERE id = ?", w.walletAcct)
		hear(t, org, "a credit to the wallet")
		exec(t, other, "UPDATE ledger_accounts SET balance_fen = balance_fen - 10 WHERE id = ?", w.walletAcct)
		sentinel("after a debit")
		if pending(org) {
			t.Error("a debit woke the organisation's subscribers")
		}
	})
}

// Run ends with its context and leaves no goroutine behind.
func TestRunLeavesNoGoroutines(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := changefeed.New()
		ctx, cancel := context.WithCancel(context.Background())
		// The driver ends Run from a goroutine counted in before, so
		// that whether it has exited yet does not matter.
		go func() {
			<-f.Ready()
			for range 100 {
				f.Subscribe(changefeed.Rental(1)).Close()
			}
			cancel()
		}()
		before := runtime.NumGoroutine()
		f.Run(ctx, db, changefeed.Options{Poll: 10 * time.Millisecond}) // returns when ctx ends
		// Run waits for what it started; a goroutine a driver's close
		// lets go of gets the scheduler until the deadline.
		for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; runtime.Gosched() {
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines, %d before Run", runtime.NumGoroutine(), before)
			}
		}
		if _, ok := f.Version(changefeed.Rental(1)); ok {
			t.Error("a stopped feed promised a version")
		}
	})
}

// excluded are the columns whose changes the triggers leave out on
// purpose: identity, and what the meter and the housekeeping passes
// write (see migration 00031).
var excluded = map[string][]string{
	"rentals": {"id", "created_at", "updated_at", "billed_until", "carry_num", "billed_fen", "earned_fen", "downtime_secs",
		"low_balance_mailed", "idle_warned_at",
		// earned_fen < billed_fen, generated (migration 00037).
		"unearned"},
	"volumes": {"id", "created_at", "billed_until", "carry_num", "billed_fen", "reminded_days"},
}

// Every column of a table the triggers filter is either compared by its
// update trigger or left out on purpose: a new column cannot silently
// stop a page from following its rental.
func TestTriggersCoverEveryColumn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		for table, trigger := range map[string]string{"rentals": "rentals_changed", "volumes": "volumes_changed"} {
			var def string
			var cols []string
			if db.Dialect == "postgres" {
				if err := db.R.Raw("SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = ?", trigger).Scan(&def).Error; err != nil {
					t.Fatal(err)
				}
				if err := db.R.Raw("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?", table).
					Scan(&cols).Error; err != nil {
					t.Fatal(err)
				}
			} else {
				if err := db.R.Raw("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", trigger).Scan(&def).Error; err != nil {
					t.Fatal(err)
				}
				if err := db.R.Raw("SELECT name FROM pragma_table_info(?)", table).Scan(&cols).Error; err != nil {
					t.Fatal(err)
				}
			}
			if def == "" || len(cols) < 10 {
				t.Fatalf("%s: trigger %q, columns %v", table, def, cols)
			}
			// Its condition only: the body names the ids it reports.
			def = regexp.MustCompile(`(?is)\bWHEN\b(.*?)\b(BEGIN|EXECUTE)\b`).FindString(def)
			for _, c := range cols {
				named := regexp.MustCompile(`(?i)new\.` + regexp.QuoteMeta(c) + `\b`).MatchString(def)
				if named == slices.Contains(excluded[table], c) {
					t.Errorf("%s.%s: compared by %s: %v; left out on purpose: %v", table, c, trigger, named, !named)
				}
			}
		}
	})
}

// On SQLite the poller prunes only rows it has read and that are old;
// ids go on from the last one ever given, so no gap is seen.
func TestPruneKeepsWhatIsUnreadOrNew(t *testing.T) {
	db := dbtest.SQLite(t)
	ctx := context.Background()
	exec(t, db, "INSERT INTO change_log (topic, ref_id, created_at) VALUES ('rental', 1, 0), ('rental', 2, 0), ('rental', 3, CAST(strftime('%s', 'now') AS INTEGER))")
	last, err := changelog.Latest(ctx, db)
	if err != nil || last != 3 {
		t.Fatalf("latest %d, %v", last, err)
	}
	if err := changelog.Prune(ctx, db, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	cs, err := changelog.After(ctx, db, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, strconv.FormatInt(c.ID, 10)+":"+c.Topic+":"+strconv.FormatInt(c.RefID, 10))
	}
	if strings.Join(got, " ") != "2:rental:2 3:rental:3" {
		t.Errorf("after pruning up to 1: %v", got)
	}
	if err := changelog.Prune(ctx, db, 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	exec(t, db, "INSERT INTO change_log (topic, ref_id, created_at) VALUES ('org', 9, 0)")
	if cs, err = changelog.After(ctx, db, 3, 10); err != nil || len(cs) != 1 || cs[0].ID != 4 {
		t.Errorf("after pruning everything read: %+v, %v", cs, err)
	}
	if _, _, ok := changelog.Parse("rental:x"); ok {
		t.Error("parsed a payload without an id")
	}
	if topic, id, ok := changelog.Parse("org:12"); !ok || topic != "org" || id != 12 {
		t.Errorf("Parse(org:12) = %q %d %v", topic, id, ok)
	}
}

// Two processes' feeds on one database (or one process before and after
// a restart) never give the same version: a tag that one answered names
// a state the other never saw, so it must not match there.
func TestVersionsAreTheFeedsOwn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		k := changefeed.Rental(1)
		a, b := run(t, db), run(t, otherProcess(t, db))
		va, okA := a.Version(k)
		vb, okB := b.Version(k)
		if !okA || !okB || va == vb {
			t.Fatalf("versions %q (%v) and %q (%v): two feeds gave one version", va, okA, vb, okB)
		}
	})
}

// A session's end (its row deleted: a logout) is reported under the id
// changelog.Session reads for it while it lasts.
func TestSessionEndsAreHeard(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := run(t, db)
		ctx := context.Background()
		expiry := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		for _, tok := range []string{"other-token", "the-token"} {
			exec(t, db, "INSERT INTO sessions (token, data, expiry) VALUES (?, ?, ?)", tok, []byte("x"), expiry)
		}
		id, exp, found, err := changelog.Session(ctx, db, "the-token")
		if err != nil || !found || !exp.Equal(expiry) {
			t.Fatalf("Session: %d %v %v %v, want expiry %v", id, exp, found, err, expiry)
		}
		other, _, _, _ := changelog.Session(ctx, db, "other-token")
		if other == id {
			t.Fatalf("two sessions share the id %d", id)
		}
		s := f.Subscribe(changefeed.Session(id))
		defer s.Close()
		exec(t, db, "DELETE FROM sessions WHERE token = ?", "the-token")
		hear(t, s, "logout")
		if _, _, found, err := changelog.Session(ctx, db, "the-token"); found || err != nil {
			t.Fatalf("a deleted session is found: %v %v", found, err)
		}
	})
}

// A mark taken before a read tells whether a key the read named changed
// before the subscription to it: a change since, or a gap, says so.
func TestChangedSinceAMark(t *testing.T) {
	t.Parallel()
	f := run(t, dbtest.SQLite(t))
	k := changefeed.Org(7)
	m := f.Mark()
	if f.ChangedSince(m, k) {
		t.Fatal("nothing was published, yet the key changed")
	}
	f.Publish(k)
	if !f.ChangedSince(m, k) || f.ChangedSince(f.Mark(), k) {
		t.Fatal("a publish after the mark was not seen, or one before it was")
	}
	m = f.Mark()
	f.PublishAll()
	if !f.ChangedSince(m, k) {
		t.Fatal("a gap after the mark was not seen")
	}
}

// A GPU's telemetry sample, written as the heartbeat writes it (in its
// transaction, by another process), reaches that GPU's subscribers and
// no other GPU's; the purge of old samples reaches nobody.
func TestGPUSamplesAreHeard(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newWorld(t, db)
		f := run(t, db)
		other := otherProcess(t, db)
		var gpus []int64
		if err := db.R.Raw("SELECT id FROM gpus ORDER BY id LIMIT 2").Scan(&gpus).Error; err != nil || len(gpus) != 2 {
			t.Fatalf("two GPUs: %v %v", gpus, err)
		}
		sampled := f.Subscribe(changefeed.GPU(gpus[0]))
		defer sampled.Close()
		unsampled := f.Subscribe(changefeed.GPU(gpus[1]))
		defer unsampled.Close()
		user := f.Subscribe(changefeed.User(w.userID))
		defer user.Close()
		at := time.Date(2030, 1, 2, 4, 0, 0, 0, time.UTC)
		if err := other.Tx(context.Background(), func(tx *gorm.DB) error {
			return supply.InsertGPUSample(tx, &models.GPUSample{GPUID: gpus[0], At: at, UtilPct: 42, MemUsedMiB: 1024, PowerW: 200, TempC: 60, SMClockMHz: 1800})
		}); err != nil {
			t.Fatal(err)
		}
		// As the heartbeat does after its commit (a no-op on SQLite,
		// whose trigger wrote the change in the transaction).
		if err := supply.NotifyGPUsSampled(context.Background(), other, []int64{gpus[0]}); err != nil {
			t.Fatal(err)
		}
		hear(t, sampled, "a sample of the GPU")
		if _, err := supply.PruneGPUSamples(context.Background(), other, at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		// Heard in commit order: once a later change is heard, an earlier
		// one would have been.
		exec(t, other, "UPDATE users SET session_epoch = session_epoch + 1 WHERE id = ?", w.userID)
		hear(t, user, "a later change")
		if pending(unsampled) {
			t.Error("a sample of one GPU woke another GPU's subscriber")
		}
		if pending(sampled) {
			t.Error("pruning old samples woke the GPU's subscriber")
		}
	})
}

// Settle drops a wake-up that tells only of changes from before a mark
// (a read taken after the mark saw them), and keeps one for a change
// since, or while the feed reads no source.
func TestSettleDropsOnlyWhatAReadSaw(t *testing.T) {
	t.Parallel()
	f := run(t, dbtest.SQLite(t))
	s := f.Subscribe(changefeed.GPU(1), changefeed.GPU(2))
	defer s.Close()
	f.Publish(changefeed.GPU(1))
	m := f.Mark() // a read from here on sees that change
	f.Publish(changefeed.GPU(2))
	s.Settle(m)
	if !pending(s) {
		t.Fatal("a wake-up for a change after the mark was dropped")
	}
	f.Publish(changefeed.GPU(1))
	f.Publish(changefeed.GPU(2))
	s.Settle(f.Mark())
	if pending(s) {
		t.Fatal("a wake-up for changes before the mark was kept")
	}
	s.Settle(f.Mark()) // nothing waiting: nothing to drop or add
	if pending(s) {
		t.Fatal("Settle woke a subscription with nothing waiting")
	}
	idle := changefeed.New() // reads no source: no mark promises anything
	i := idle.Subscribe(changefeed.GPU(1))
	defer i.Close()
	idle.Publish(changefeed.GPU(1))
	i.Settle(idle.Mark())
	if !pending(i) {
		t.Fatal("a feed that reads no source dropped a wake-up")
	}
}
