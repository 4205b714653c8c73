package listing_test

import (
	"context"
	"reflect"
	"testing"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/listing"
)

// TestListedRowsAsGormReadsThem: the hand-written scan and join read
// exactly the offers models.PublicOfferSQL selects, field by field as
// gorm reads them, whole and by id; a paused offer, a draining node and
// a suspended provider organisation leave the list.
func TestListedRowsAsGormReadsThem(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		var some models.Offer
		if err := db.W.Where("interruptible_floor_per_gpu_hour_fen IS NOT NULL").First(&some).Error; err != nil {
			t.Fatal(err)
		}
		var other models.Offer
		db.W.Where("node_id <> ?", some.NodeID).Order("id DESC").First(&other)
		db.W.Exec(`UPDATE offers SET status = 'paused' WHERE id = (SELECT MIN(id) FROM offers)`)
		db.W.Exec(`UPDATE nodes SET status = 'draining' WHERE id = ?`, other.NodeID)
		var provOrg struct{ OrgID *int64 }
		db.W.Raw(`SELECT org_id FROM providers WHERE org_id IS NOT NULL LIMIT 1`).Scan(&provOrg)
		if provOrg.OrgID != nil {
			db.W.Exec(`UPDATE orgs SET suspended_at = ? WHERE id = ?`, db.Now(), *provOrg.OrgID)
		}
		var want []models.Offer
		if err := db.W.Where(models.PublicOfferSQL, models.OfferListed, false).Order("id").Find(&want).Error; err != nil {
			t.Fatal(err)
		}
		rows, _, err := listing.All(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want) || len(want) < 30 {
			t.Fatalf("%d rows, gorm reads %d", len(rows), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(rows[i].Offer, want[i]) {
				t.Fatalf("offer %d:\n%+v\ngorm:\n%+v", want[i].ID, rows[i].Offer, want[i])
			}
		}
		onNode, err := listing.OnNodes(ctx, db, []int64{some.NodeID})
		if err != nil || len(onNode) == 0 || onNode[0].NodeID != some.NodeID {
			t.Fatalf("on node %d: %d rows, %v", some.NodeID, len(onNode), err)
		}
	})
}
