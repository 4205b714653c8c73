package standingorders

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/demo"
	"suanli/fleet"
	"suanli/models"
	"suanli/models/orderstore"
	supplystore "suanli/models/supply"
	"suanli/pricing"
	"suanli/rentals"
)

// The harness: the seeded demo market, a renter with a funded wallet,
// the rental service (its provisioning jobs are only counted: a rent is
// what the orders are about, not the NVML checks after it) and the
// standing orders' service. The B200 offer in Frankfurt is the only one
// of its model, so the tests decide exactly which of its GPUs are free.

// noJobs is a rentals.Provisioner that enqueues nothing.
type noJobs struct{}

func (noJobs) EnqueueProvision(context.Context, *sql.Tx, int64) error { return nil }
func (noJobs) EnqueueMarket(context.Context, *sql.Tx) error           { return nil }

// clock is a database clock the tests move.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type rig struct {
	t      testing.TB
	ctx    context.Context
	db     *models.DB
	clock  *clock
	svc    *Service
	user   *models.User
	org    *models.Org
	member *models.Membership
	offer  models.Offer
	gpus   []int64
}

// weekdayMorning is 10:00 Asia/Shanghai on a weekday: peak prices.
func weekdayMorning() time.Time {
	d := time.Date(2026, 12, 2, 10, 0, 0, 0, pricing.Shanghai) // a Wednesday
	return d.UTC()
}

func newRig(t testing.TB, db *models.DB, fundFen int64) *rig {
	t.Helper()
	ctx := context.Background()
	c := &clock{t: weekdayMorning()}
	db.Now = c.Now
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	acc := &accounts.Service{DB: db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
	u, err := acc.CreateUser(ctx, "renter@example.com", "renter-pass-2026", "Renter", false)
	if err != nil {
		t.Fatal(err)
	}
	orgs, err := db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("the renter's organisations: %v %v", orgs, err)
	}
	org, m := orgs[0].Org, orgs[0].Membership
	if fundFen > 0 {
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, org.ID, fundFen, "promo_credit", "test funds", nil, nil, c.Now())
		}); err != nil {
			t.Fatal(err)
		}
	}
	rs := &rentals.Service{DB: db, Wallet: &billing.Wallet{DB: db}, Hub: fleet.NewHub(), Jobs: noJobs{}, BaseURL: "http://suanli.test"}
	r := &rig{t: t, ctx: ctx, db: db, clock: c, svc: &Service{DB: db, Rentals: rs, Accounts: acc}, user: u, org: &org, member: &m}
	if err := db.R.Where("gpu_model = ?", "b200").First(&r.offer).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.R.Model(&models.GPU{}).Where("node_id = ?", r.offer.NodeID).Order("idx").Pluck("id", &r.gpus).Error; err != nil || len(r.gpus) < 4 {
		t.Fatalf("the B200 node's GPUs: %v %v", r.gpus, err)
	}
	// Its agent reports every GPU healthy; none is free yet.
	must(t, db.W.Model(&models.Node{}).Where("id = ?", r.offer.NodeID).Update("health", models.NodeHealthy).Error)
	must(t, db.W.Model(&models.GPU{}).Where("node_id = ?", r.offer.NodeID).Updates(map[string]any{"health": models.GPUHealthy, "state": models.GPUBusy}).Error)
	r.refresh()
	return r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// refresh recomputes the node's free GPU count, as the transactions that
// take and free GPUs do.
func (r *rig) refresh() {
	r.t.Helper()
	must(r.t, r.db.Tx(r.ctx, func(tx *gorm.DB) error { return supplystore.RefreshNodeAvailability(tx, r.offer.NodeID, r.clock.Now()) }))
}

// free frees the node's GPUs of these indexes that no live rental holds,
// as a rental's end does.
func (r *rig) free(idx ...int) {
	r.t.Helper()
	must(r.t, r.db.Tx(r.ctx, func(tx *gorm.DB) error {
		for _, i := range idx {
			if err := tx.Exec(`UPDATE gpus SET state = 'free' WHERE id = ? AND id NOT IN (SELECT gpu_id FROM rental_gpus WHERE released_at IS NULL)`, r.gpus[i]).Error; err != nil {
				return err
			}
		}
		return supplystore.RefreshNodeAvailability(tx, r.offer.NodeID, r.clock.Now())
	}))
}

var (
	keyOnce sync.Once
	key     string
)

func sshKey() string {
	keyOnce.Do(func() {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		k, _ := ssh.NewPublicKey(pub)
		key = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " renter@test"
	})
	return key
}

// input is a rent order for n B200s at up to maxFen per GPU-hour, for a day.
func (r *rig) input(n int, maxFen int64) Input {
	return Input{OrgID: r.org.ID, Filters: Filters{GPU: "b200", MaxPriceFen: maxFen}, GPUs: n, Action: orderstore.ActionRent,
		SSHPublicKey: sshKey(), ExpiresAt: r.clock.Now().Add(24 * time.Hour)}
}

func (r *rig) place(in Input) *orderstore.Order {
	r.t.Helper()
	o, err := r.svc.Place(r.ctx, r.user, r.org, r.member, in)
	if err != nil {
		r.t.Fatalf("place: %v", err)
	}
	return o
}

func (r *rig) order(id int64) orderstore.Order {
	r.t.Helper()
	o, err := orderstore.ByID(r.ctx, r.db, id)
	must(r.t, err)
	return o
}

// rentals are the organisation's rentals.
func (r *rig) rentals() []models.Rental {
	r.t.Helper()
	var rs []models.Rental
	must(r.t, r.db.R.Where("org_id = ?", r.org.ID).Order("id").Find(&rs).Error)
	return rs
}

// mails are the renter's mails whose subject contains s.
func (r *rig) mails(s string) []models.OutboxMail {
	r.t.Helper()
	ms, err := r.db.Outbox(r.ctx, r.user.Email, 100)
	must(r.t, err)
	var out []models.OutboxMail
	for _, m := range ms {
		if strings.Contains(m.Subject, s) {
			out = append(out, m)
		}
	}
	return out
}

func (r *rig) pass() {
	r.t.Helper()
	if err := r.svc.Pass(r.ctx); err != nil {
		r.t.Fatalf("pass: %v", err)
	}
}

// orderNo is how mails name an order.
func orderNo(id int64) string { return fmt.Sprintf("#%d", id) }
