package demo_test

import (
	"context"
	"testing"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/migrations"
	"suanli/models"
	"suanli/models/listing"
)

func TestSeedDemoIsBelievableAndIdempotent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		v1, _ := db.OffersVersion(ctx)
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		v2, _ := db.OffersVersion(ctx)
		if v1 != v2 {
			t.Errorf("second seed changed the offers version %d → %d", v1, v2)
		}
		rows, _, err := listing.All(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) < 40 {
			t.Fatalf("%d demo offers, want 40+", len(rows))
		}
		dcs := map[string]bool{}
		models_ := map[string]bool{}
		for _, r := range rows {
			if !r.Demo || !r.Datacenter.Demo || !r.Provider.Demo {
				t.Errorf("offer %d not marked demo", r.ID)
			}
			dcs[r.Datacenter.Slug] = true
			models_[r.GPUModel] = true
			if r.MonthlyPricePerGPUFen == nil || r.PricePerGPUHourFen*730 <= *r.MonthlyPricePerGPUFen {
				t.Errorf("offer %d: on-demand ×730 must be above the monthly price", r.ID)
			}
			if r.AvailableGPUs > r.MaxGPUs || r.AvailableGPUs < 0 {
				t.Errorf("offer %d: available %d of %d", r.ID, r.AvailableGPUs, r.MaxGPUs)
			}
		}
		if len(dcs) != 9 {
			t.Errorf("offers in %d datacentres, want all 9", len(dcs))
		}
		for _, m := range []string{"rtx-4090", "l40s", "a100-80g-sxm", "h100-sxm", "h200-sxm", "v100-32g-sxm2"} {
			if !models_[m] {
				t.Errorf("no demo offer of %s", m)
			}
		}
		// Chengdu datacentres publish latency from Chengdu.
		for _, r := range rows {
			if r.Datacenter.City == "chengdu" && r.Latency["chengdu"] != 3 {
				t.Errorf("offer %d in Chengdu: latency from Chengdu %v", r.ID, r.Latency["chengdu"])
			}
		}
		st, err := migrations.Check(ctx, db.Dialect, db.SQL)
		if err != nil || st.Behind() {
			t.Errorf("schema after migrate: %v %v", st, err)
		}
	})
}

func TestSeedScaleAddsSyntheticOffersEverywhere(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedScale(ctx, db, 1200); err != nil {
			t.Fatal(err)
		}
		if err := demo.SeedScale(ctx, db, 30); err != nil {
			t.Fatal(err)
		}
		rows, _, err := listing.All(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1230 {
			t.Fatalf("%d offers, want 1230", len(rows))
		}
		dcs, gpus := map[string]bool{}, map[string]bool{}
		for _, r := range rows {
			if !r.Synthetic || !r.Provider.Synthetic || r.Demo {
				t.Fatalf("offer %d must be marked synthetic, not demo", r.ID)
			}
			dcs[r.Datacenter.Slug], gpus[r.GPUModel] = true, true
		}
		if len(dcs) != 9 || len(gpus) != 12 {
			t.Errorf("spread over %d datacentres and %d models, want 9 and 12", len(dcs), len(gpus))
		}
		if err := demo.SeedScale(ctx, db, 0); err == nil {
			t.Error("scale 0 must be refused")
		}
	})
}

func TestSeedAdminOnce(t *testing.T) {
	db := dbtest.SQLite(t)
	ctx := context.Background()
	s := &accounts.Service{DB: db}
	for i := 0; i < 2; i++ {
		if _, err := demo.SeedAdmin(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	u, err := db.UserByEmail(ctx, demo.AdminEmail)
	if err != nil || !u.PlatformAdmin || !u.Verified() {
		t.Fatalf("demo admin %+v %v", u, err)
	}
	var n int64
	db.R.Model(&models.User{}).Count(&n)
	if n != 1 {
		t.Errorf("%d users after seeding twice", n)
	}
}
