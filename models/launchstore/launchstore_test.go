package launchstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/launchstore"
	"suanli/models/listing"
	"suanli/models/rentalstore"
	"suanli/secrets"
)

// world is a seeded database with an organisation that rents.
type world struct {
	ctx   context.Context
	db    *models.DB
	org   *models.Org
	user  *models.User
	offer models.Offer
	now   time.Time
	n     int
}

func newWorld(t *testing.T, db *models.DB) *world {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	w := &world{ctx: ctx, db: db, now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	w.user = &models.User{Email: "launcher@example.com", Name: "L", Lang: "en", CreatedAt: w.now}
	if err := models.InsertUser(db.W, w.user); err != nil {
		t.Fatal(err)
	}
	w.org = &models.Org{Kind: "team", Name: "L", Personal: true, Status: models.OrgActive, CreatedAt: w.now}
	if err := models.InsertOrg(db.W, w.org); err != nil {
		t.Fatal(err)
	}
	rows, _, err := listing.All(ctx, db)
	if err != nil || len(rows) == 0 {
		t.Fatalf("offers: %d, %v", len(rows), err)
	}
	w.offer = rows[0].Offer
	return w
}

// rental inserts a rental of the world's organisation with the status,
// created i seconds after the world's start.
func (w *world) rental(t *testing.T, status models.RentalStatus) int64 {
	t.Helper()
	w.n++
	at := w.now.Add(time.Duration(w.n) * time.Second)
	r := &models.Rental{OrgID: w.org.ID, UserID: w.user.ID, OfferID: w.offer.ID, ProviderID: w.offer.ProviderID, GPUs: 1, SLA: "standard",
		Term: "on_demand", Status: status, SSHPublicKey: "ssh-ed25519 AAAA", WorkspaceID: "ws-" + strconv.Itoa(w.n),
		PricePerGPUHourFen: 1000, CreatedAt: at, UpdatedAt: at}
	if err := rentalstore.InsertRental(w.db.W, r); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func (w *world) save(t *testing.T, box *secrets.Box, id int64, name string, labels map[string]string, s launchstore.Secrets) {
	t.Helper()
	if err := w.db.Tx(w.ctx, func(tx *gorm.DB) error { return launchstore.Save(tx, box, id, name, labels, s, w.now) }); err != nil {
		t.Fatal(err)
	}
}

func testBox(t *testing.T) *secrets.Box {
	t.Helper()
	k, err := secrets.ParseKey(secrets.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return k.Box("registry-credentials")
}

// A spec's environment and script are sealed at rest — no cell of any
// table holds them — and open only with the box that sealed them, for
// the rental they were sealed for; release forgets them and keeps the
// name and labels.
func TestSecretsAreSealedAtRest(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newWorld(t, db)
		box := testBox(t)
		id, other := w.rental(t, models.RentalPending), w.rental(t, models.RentalPending)
		const envValue, script = "hf_s3cr3t-token-value", "echo onstart-s3cr3t > /tmp/x"
		in := launchstore.Secrets{Env: map[string]string{"HF_TOKEN": envValue, "EMPTY": ""}, Onstart: script}
		w.save(t, box, id, "trainer", map[string]string{"cluster": "c1"}, in)

		if found := dbtest.Find(t, db, []byte(envValue), []byte("onstart-s3cr3t")); len(found) > 0 {
			t.Fatalf("a secret is stored in plain text in %v", found)
		}
		var row launchstore.Spec
		if err := db.R.Where("rental_id = ?", id).First(&row).Error; err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(row.SealedEnv, "v1.") || !strings.HasPrefix(row.SealedOnstart, "v1.") || row.Name != "trainer" {
			t.Fatalf("stored spec %+v", row)
		}

		got, err := launchstore.Open(db.R, box, id)
		if err != nil || got.Env["HF_TOKEN"] != envValue || len(got.Env) != 2 || got.Onstart != script {
			t.Fatalf("opened %+v %v", got, err)
		}
		if _, err := launchstore.Open(db.R, testBox(t), id); !errors.Is(err, launchstore.ErrSealed) {
			t.Errorf("another key opens it: %v", err)
		}
		if _, err := launchstore.Open(db.R, nil, id); !errors.Is(err, launchstore.ErrSealed) {
			t.Errorf("no key: %v", err)
		}
		// Moved to another rental's row, it opens for none.
		if err := db.W.Create(&launchstore.Spec{RentalID: other, SealedEnv: row.SealedEnv, SealedOnstart: row.SealedOnstart, CreatedAt: w.now}).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := launchstore.Open(db.R, box, other); !errors.Is(err, launchstore.ErrSealed) {
			t.Errorf("another rental's sealed spec opens: %v", err)
		}
		if got, err := launchstore.Open(db.R, box, w.rental(t, models.RentalPending)); err != nil || !got.Empty() {
			t.Errorf("a rental without a spec: %+v %v", got, err)
		}

		shown, err := launchstore.ShownOf(w.ctx, db, []int64{id})
		if s := shown[id]; err != nil || s.Name != "trainer" || s.Labels["cluster"] != "c1" || !s.EnvSet || !s.OnstartSet {
			t.Fatalf("shown %+v %v", shown, err)
		}
		if err := db.Tx(w.ctx, func(tx *gorm.DB) error { return rentalstore.ReleaseRental(tx, id, w.now) }); err != nil {
			t.Fatal(err)
		}
		if got, err := launchstore.Open(db.R, box, id); err != nil || !got.Empty() {
			t.Errorf("after release: %+v %v", got, err)
		}
		shown, err = launchstore.ShownOf(w.ctx, db, []int64{id})
		if s := shown[id]; err != nil || s.Name != "trainer" || s.Labels["cluster"] != "c1" || s.EnvSet || s.OnstartSet {
			t.Errorf("shown after release %+v %v", shown, err)
		}

		// Secrets with no box are refused, and nothing is written.
		lone := w.rental(t, models.RentalPending)
		err = db.Tx(w.ctx, func(tx *gorm.DB) error {
			return launchstore.Save(tx, nil, lone, "x", nil, launchstore.Secrets{Onstart: "x"}, w.now)
		})
		if !errors.Is(err, launchstore.ErrSealed) {
			t.Errorf("secrets without a box: %v", err)
		}
		var n int64
		db.R.Model(&launchstore.Spec{}).Where("rental_id = ?", lone).Count(&n)
		if n != 0 {
			t.Errorf("a refused save wrote %d specs", n)
		}
	})
}

// The list filter keeps the rentals with every label asked for and the
// name, live first then newest first, and counts them all.
func TestRentalsPageFiltersByLabelsAndName(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newWorld(t, db)
		a := w.rental(t, models.RentalStopped)
		b := w.rental(t, models.RentalRunning)
		c := w.rental(t, models.RentalRunning)
		d := w.rental(t, models.RentalRunning)
		w.save(t, nil, a, "head", map[string]string{"cluster": "c1", "role": "head"}, launchstore.Secrets{})
		w.save(t, nil, b, "worker", map[string]string{"cluster": "c1", "role": "worker"}, launchstore.Secrets{})
		w.save(t, nil, c, "worker", map[string]string{"cluster": "c2", "role": "worker"}, launchstore.Secrets{})
		_ = d // no spec
		ids := func(f launchstore.Filter, offset, limit int) ([]int64, int64) {
			t.Helper()
			rs, n, err := launchstore.RentalsPage(w.ctx, db, w.org.ID, f, offset, limit)
			if err != nil {
				t.Fatal(err)
			}
			out := []int64{}
			for _, r := range rs {
				out = append(out, r.ID)
			}
			return out, n
		}
		for _, c2 := range []struct {
			name string
			f    launchstore.Filter
			want []int64
		}{
			{"no filter: live first, newest first", launchstore.Filter{}, []int64{d, c, b, a}},
			{"one label", launchstore.Filter{Labels: map[string]string{"cluster": "c1"}}, []int64{b, a}},
			{"two labels", launchstore.Filter{Labels: map[string]string{"cluster": "c1", "role": "worker"}}, []int64{b}},
			{"a label and the name", launchstore.Filter{Labels: map[string]string{"role": "worker"}, Name: "worker"}, []int64{c, b}},
			{"the name", launchstore.Filter{Name: "head"}, []int64{a}},
			{"a value no rental has", launchstore.Filter{Labels: map[string]string{"cluster": "c3"}}, []int64{}},
			{"a key no rental has", launchstore.Filter{Labels: map[string]string{"zone": "c1"}}, []int64{}},
		} {
			got, n := ids(c2.f, 0, 50)
			if !equal(got, c2.want) || n != int64(len(c2.want)) {
				t.Errorf("%s: %v (total %d), want %v", c2.name, got, n, c2.want)
			}
		}
		if got, n := ids(launchstore.Filter{Labels: map[string]string{"cluster": "c1"}}, 1, 1); !equal(got, []int64{a}) || n != 2 {
			t.Errorf("page 2 of 1: %v (total %d)", got, n)
		}
		// Another organisation's labelled rental is not listed.
		other := &models.Org{Kind: "team", Name: "O", Status: models.OrgActive, CreatedAt: w.now}
		if err := models.InsertOrg(db.W, other); err != nil {
			t.Fatal(err)
		}
		w.org, w.n = other, w.n+1
		e := w.rental(t, models.RentalRunning)
		w.save(t, nil, e, "worker", map[string]string{"cluster": "c1"}, launchstore.Secrets{})
		rs, n, err := launchstore.RentalsPage(w.ctx, db, other.ID, launchstore.Filter{Labels: map[string]string{"cluster": "c1"}}, 0, 50)
		if err != nil || n != 1 || len(rs) != 1 || rs[0].ID != e {
			t.Errorf("the other organisation's: %v %d %v", rs, n, err)
		}
	})
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
