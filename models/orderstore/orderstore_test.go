package orderstore_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/locales"
	"suanli/models"
	"suanli/models/orderstore"
)

// The queries of standing orders on both databases: free offers are the
// listed ones with free GPUs of the models asked; an order ends once
// (fill, fail, expire) and only while open; the version moves with every
// change to the open orders.
func TestOrderStore(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)

		fs, err := orderstore.FreeOffers(ctx, db, []string{"b200", "h20"})
		if err != nil || len(fs) == 0 {
			t.Fatalf("free offers: %v %v", fs, err)
		}
		for _, f := range fs {
			if (f.GPUModel != "b200" && f.GPUModel != "h20") || f.AvailableGPUs < 1 || f.City == "" {
				t.Fatalf("free offer %+v", f)
			}
		}
		// An offer paused by its provider is not free, whatever its GPUs.
		if err := db.W.Model(&models.Offer{}).Where("id = ?", fs[0].ID).Update("status", "paused").Error; err != nil {
			t.Fatal(err)
		}
		again, err := orderstore.FreeOffers(ctx, db, []string{"b200", "h20"})
		if err != nil || len(again) != len(fs)-1 {
			t.Fatalf("with one paused: %d offers (%v), want %d", len(again), err, len(fs)-1)
		}

		u, err := (&accounts.Service{DB: db}).CreateUser(ctx, "so@example.com", "renter-pass-2026", "", false)
		if err != nil {
			t.Fatal(err)
		}
		orgs, _ := db.OrgsOfUser(ctx, u.ID)
		price := int64(100)
		place := func() *orderstore.Order {
			o := &orderstore.Order{OrgID: orgs[0].Org.ID, UserID: u.ID, GPUModel: "b200", MaxPriceFen: &price, GPUs: 1, Action: orderstore.ActionNotify,
				Status: orderstore.Open, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
			if err := db.Tx(ctx, func(tx *gorm.DB) error { return orderstore.Insert(tx, o) }); err != nil {
				t.Fatal(err)
			}
			return o
		}
		v0, _ := orderstore.Version(ctx, db)
		a, b, c := place(), place(), place()
		ids, v1, err := orderstore.OpenIDs(ctx, db, now)
		if err != nil || len(ids) != 3 || v1 != v0+3 {
			t.Fatalf("open ids %v at version %d (%v), want 3 at %d", ids, v1, err, v0+3)
		}
		end := func(f func(tx *gorm.DB) (bool, error)) bool {
			var ok bool
			if err := db.Tx(ctx, func(tx *gorm.DB) (err error) { ok, err = f(tx); return err }); err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !end(func(tx *gorm.DB) (bool, error) { return orderstore.Fill(tx, a.ID, nil, fs[0].ID, now) }) {
			t.Fatal("fill: not filled")
		}
		if end(func(tx *gorm.DB) (bool, error) { return orderstore.Fill(tx, a.ID, nil, fs[0].ID, now) }) ||
			end(func(tx *gorm.DB) (bool, error) {
				return orderstore.Fail(tx, a.ID, fs[0].ID, "conflict", "no", locales.M("err.rent_balance", "1", "0"), now)
			}) {
			t.Fatal("a filled order ended again")
		}
		if !end(func(tx *gorm.DB) (bool, error) {
			return orderstore.Fail(tx, b.ID, fs[0].ID, "conflict", "no money", locales.M("err.rent_balance", "1.00", "0.00"), now)
		}) {
			t.Fatal("fail: not failed")
		}
		got, err := orderstore.ByID(ctx, db, b.ID)
		if err != nil || got.Status != orderstore.Failed || got.Failure != "no money" || got.FailureMsg.Key != "err.rent_balance" || got.EndedAt == nil {
			t.Fatalf("failed order %+v (%v)", got, err)
		}
		due, err := orderstore.DueToExpire(ctx, db, now.Add(time.Hour), 10)
		if err != nil || len(due) != 1 || due[0].ID != c.ID {
			t.Fatalf("due to expire: %+v (%v), want order %d", due, err, c.ID)
		}
		if !end(func(tx *gorm.DB) (bool, error) { return orderstore.Expire(tx, c.ID, now.Add(time.Hour)) }) {
			t.Fatal("expire: not expired")
		}
		ids, v2, _ := orderstore.OpenIDs(ctx, db, now)
		if len(ids) != 0 || v2 != v1+3 {
			t.Fatalf("open ids %v at version %d, want none at %d", ids, v2, v1+3)
		}
		read, err := orderstore.ByIDs(ctx, db, []int64{a.ID, b.ID, c.ID, 999999})
		if err != nil || len(read) != 3 {
			t.Fatalf("by ids: %d (%v), want 3", len(read), err)
		}
	})
}
