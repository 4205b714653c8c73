package demo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/models"
	"suanli/models/demodata"
	"suanli/models/identitystore"
)

// ProviderEmail is the demo's provider user: the owner of the first demo
// provider, so that the provider portal has live (simulated) nodes,
// rentals and earnings to show.
const ProviderEmail = "provider@demo.suanli.test"

// demoProviderSlug is the demo provider the provider user owns.
const demoProviderSlug = "demo-tianfu-compute"

// The demo provider's contact person and company name.
const (
	demoProviderContact = "陈晓"
	demoProviderCompany = "天府算力 Tianfu Compute"
)

// SeedProvider creates the demo provider user with a fresh random password,
// an approved provider organisation, and links the first demo provider to
// it, and returns the login; if the user exists it says so and changes
// nothing.
func SeedProvider(ctx context.Context, s *accounts.Service) (Login, error) {
	l := Login{Email: ProviderEmail}
	_, err := s.DB.UserByEmail(ctx, ProviderEmail)
	if err == nil {
		slog.Info("demo provider user exists", "email", ProviderEmail)
		return l, nil
	}
	if apperr.Code(err) != apperr.ENOTFOUND {
		return l, err
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return l, err
	}
	password := base64.RawURLEncoding.EncodeToString(b)
	// Names are data, shown as they are in both languages: a person's
	// name and the company's own (Chinese and English) name. The portal
	// marks the provider as demo data in the reader's language.
	u, err := s.CreateUser(ctx, ProviderEmail, password, demoProviderContact, false)
	if err != nil {
		return l, err
	}
	org, err := s.CreateOrg(ctx, u, models.OrgProvider, demoProviderCompany)
	if err != nil {
		return l, err
	}
	now := s.DB.Now().UTC()
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := demodata.LinkDemoProvider(tx, demodata.DemoProviderOwner{
			UserID: u.ID, OrgID: org.ID, Slug: demoProviderSlug,
			ContactName: demoProviderContact, ContactEmail: ProviderEmail,
			LicenceNo: "DEMO-0000000000000000", BankName: "示例银行 Example Bank",
			BankAccountName: demoProviderCompany, BankAccountNo: "0000 0000 0000 0000",
		}, now); err != nil {
			return err
		}
		// Its organisation verification (企业认证) is done, so that the
		// demo's payouts run as they would for a real provider.
		return identitystore.MarkOrgVerified(tx, org.ID, now)
	})
	if err != nil {
		return l, err
	}
	slog.Info("demo provider created: log in at /login and open /provider to see its nodes and earnings",
		"email", ProviderEmail, "password", password)
	l.Password = password
	return l, nil
}
