package models_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/locales"
	"suanli/models"
	"suanli/models/demodata"
)

func TestLinkDemoProvider(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Second)
		owner := func(email string) demodata.DemoProviderOwner {
			t.Helper()
			u := &models.User{Email: email, Name: "owner", Lang: locales.ZH, PasswordHash: "x", CreatedAt: now}
			org := &models.Org{Kind: models.OrgProvider, Name: email, Status: models.OrgPending, CreatedAt: now}
			if err := db.Tx(ctx, func(tx *gorm.DB) error {
				if err := models.InsertUser(tx, u); err != nil {
					return err
				}
				return models.InsertOrg(tx, org)
			}); err != nil {
				t.Fatal(err)
			}
			return demodata.DemoProviderOwner{UserID: u.ID, OrgID: org.ID, Slug: demo.DemoProviderSlug,
				ContactName: "陈晓", ContactEmail: email, LicenceNo: "DEMO-1", BankName: "Bank",
				BankAccountName: "Tianfu", BankAccountNo: "0000"}
		}
		o := owner("first@demo.test")
		if err := db.Tx(ctx, func(tx *gorm.DB) error { return demodata.LinkDemoProvider(tx, o, now) }); err != nil {
			t.Fatal(err)
		}
		u, err := db.UserByID(ctx, o.UserID)
		if err != nil || u.EmailVerifiedAt == nil || !u.EmailVerifiedAt.Equal(now) {
			t.Errorf("user: %+v, %v", u, err)
		}
		org, err := db.OrgByID(ctx, o.OrgID)
		if err != nil || org.Status != models.OrgApproved || org.StatusReason != "demo" || org.ReviewedAt == nil || !org.ReviewedAt.Equal(now) {
			t.Errorf("org: %+v, %v", org, err)
		}
		var p models.Provider
		if err := db.R.Where("slug = ?", demo.DemoProviderSlug).First(&p).Error; err != nil {
			t.Fatal(err)
		}
		if p.OrgID == nil || *p.OrgID != o.OrgID || p.ContactName != o.ContactName || p.ContactEmail != o.ContactEmail ||
			p.LicenceNo != o.LicenceNo || p.BankName != o.BankName || p.BankAccountName != o.BankAccountName || p.BankAccountNo != o.BankAccountNo {
			t.Errorf("provider: %+v", p)
		}
		// A provider some organisation owns already is not handed over again.
		o2 := owner("second@demo.test")
		if err := db.Tx(ctx, func(tx *gorm.DB) error { return demodata.LinkDemoProvider(tx, o2, now) }); err != nil {
			t.Fatal(err)
		}
		db.R.Where("slug = ?", demo.DemoProviderSlug).First(&p)
		if *p.OrgID != o.OrgID || p.ContactEmail != o.ContactEmail {
			t.Errorf("provider handed over twice: org %d, contact %s", *p.OrgID, p.ContactEmail)
		}
	})
}

func TestDemoNodesToRun(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		var all []models.Node
		db.R.Where("demo").Order("id").Find(&all)
		ns, err := demodata.DemoNodesToRun(ctx, db)
		if err != nil || len(ns) != len(all) || len(ns) < 2 {
			t.Fatalf("%d nodes (%v), want %d", len(ns), err, len(all))
		}
		if !slices.IsSortedFunc(ns, func(a, b models.Node) int { return int(a.ID - b.ID) }) {
			t.Error("not in id order")
		}
		if err := db.W.Model(&models.Node{}).Where("id = ?", ns[0].ID).Update("status", models.NodeRemoved).Error; err != nil {
			t.Fatal(err)
		}
		// A non-demo node never gets a demo agent.
		if err := db.W.Model(&models.Node{}).Where("id = ?", ns[1].ID).Update("demo", false).Error; err != nil {
			t.Fatal(err)
		}
		after, err := demodata.DemoNodesToRun(ctx, db)
		if err != nil || len(after) != len(ns)-2 || after[0].ID == ns[0].ID || after[0].ID == ns[1].ID {
			t.Errorf("after removing one: %d nodes, first %d (%v)", len(after), after[0].ID, err)
		}
	})
}

func TestGPUUUIDsOfNode(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		n, gs := seededNode(t, db)
		var want []string
		for _, g := range gs {
			want = append(want, g.UUID)
		}
		got, err := demodata.GPUUUIDsOfNode(context.Background(), db, n.ID)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("UUIDs %v (%v), want %v", got, err, want)
		}
		if got, err := demodata.GPUUUIDsOfNode(context.Background(), db, 1<<40); err != nil || len(got) != 0 {
			t.Errorf("missing node: %v, %v", got, err)
		}
	})
}
