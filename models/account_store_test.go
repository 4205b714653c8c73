package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
)

// Users and organisations read in a transaction, or ENOTFOUND.
func TestUserAndOrgByIDIn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		u, o := storeOwner(t, db, "reader@example.com")
		storeTx(t, db, func(tx *gorm.DB) error {
			if got, err := models.UserByIDIn(tx, u.ID); err != nil || got.Email != "reader@example.com" {
				return fmt.Errorf("user: %+v %v", got, err)
			}
			if got, err := models.OrgByIDIn(tx, o.ID); err != nil || got.Name != o.Name {
				return fmt.Errorf("org: %+v %v", got, err)
			}
			if _, err := models.UserByIDIn(tx, 9999); apperr.Code(err) != apperr.ENOTFOUND {
				return fmt.Errorf("missing user: %v", err)
			}
			if _, err := models.OrgByIDIn(tx, 9999); apperr.Code(err) != apperr.ENOTFOUND {
				return fmt.Errorf("missing org: %v", err)
			}
			return nil
		})
	})
}

// A lab address is confirmed only for the membership naming it.
func TestConfirmLabAddress(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		u, _ := storeOwner(t, db, "student@example.com")
		now := time.Now().UTC()
		lab := &models.Org{Kind: models.OrgLab, Name: "Lab", Status: models.OrgApproved, CreatedAt: now}
		storeTx(t, db, func(tx *gorm.DB) error {
			if err := models.InsertOrg(tx, lab); err != nil {
				return err
			}
			return models.AddMember(tx, &models.Membership{OrgID: lab.ID, UserID: u.ID, Role: models.RoleMember, EduEmail: "s@uni.edu.cn", CreatedAt: now})
		})
		storeTx(t, db, func(tx *gorm.DB) error {
			for _, c := range []struct {
				org, user int64
				email     string
				want      bool
			}{{lab.ID, u.ID, "other@uni.edu.cn", false}, {lab.ID, u.ID + 1, "s@uni.edu.cn", false}, {lab.ID, u.ID, "s@uni.edu.cn", true}} {
				if ok, err := models.ConfirmLabAddress(tx, c.org, c.user, c.email, now); err != nil || ok != c.want {
					return fmt.Errorf("confirm %+v: %v %v", c, ok, err)
				}
			}
			return nil
		})
		m, err := db.MembershipOf(ctx, lab.ID, u.ID)
		if err != nil || m.ConfirmedAt == nil {
			t.Errorf("membership %+v %v", m, err)
		}
		if ok, _ := db.StudentPricing(ctx, u.ID); !ok {
			t.Error("a confirmed member of an approved lab does not see student prices")
		}
	})
}

// Billing details are stored, and an hourly cap is cleared with nil.
func TestSetOrgBilling(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		_, o := storeOwner(t, db, "billing@example.com")
		capFen := int64(5000)
		storeTx(t, db, func(tx *gorm.DB) error { return models.SetOrgBilling(tx, o.ID, "Acme Ltd", "91110000X", &capFen) })
		got, err := db.OrgByID(ctx, o.ID)
		if err != nil || got.InvoiceTitle != "Acme Ltd" || got.TaxID != "91110000X" || got.HourlyCapFen == nil || *got.HourlyCapFen != 5000 {
			t.Fatalf("org %+v %v", got, err)
		}
		storeTx(t, db, func(tx *gorm.DB) error { return models.SetOrgBilling(tx, o.ID, "", "", nil) })
		if got, err := db.OrgByID(ctx, o.ID); err != nil || got.InvoiceTitle != "" || got.TaxID != "" || got.HourlyCapFen != nil {
			t.Errorf("cleared org %+v %v", got, err)
		}
	})
}
