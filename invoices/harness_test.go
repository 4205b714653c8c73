package invoices_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/invoices"
	"suanli/models"
	"suanli/models/invoicestore"
	"suanli/pricing"
)

// fixture is a team with its owner, an admin and a member, a platform
// admin, and the services the tests drive.
type fixture struct {
	t        *testing.T
	db       *models.DB
	acc      *accounts.Service
	svc      *invoices.Service
	wallet   *billing.Wallet
	owner    *models.User
	member   *models.User
	root     *models.User
	outsider *models.User
	org      *models.Org
	// personal is the owner's personal organisation.
	personal int64
}

var seq atomic.Int64

// Valid unified social credit codes (check characters computed from
// GB 32100's weights; see cnid's tests).
const (
	creditA = "91350100M000100Y43"
	creditB = "91510100MA6CFC8W34"
)

func newFixture(t *testing.T, db *models.DB) *fixture {
	t.Helper()
	ctx := context.Background()
	n := seq.Add(1)
	f := &fixture{t: t, db: db, acc: &accounts.Service{DB: db, BaseURL: "http://suanli.test"}, wallet: &billing.Wallet{DB: db}}
	f.svc = &invoices.Service{DB: db, Accounts: f.acc, BaseURL: "http://suanli.test"}
	user := func(name string, admin bool) *models.User {
		u, err := f.acc.CreateUser(ctx, fmt.Sprintf("%s-%d@example.com", name, n), "violet-kettle-1984", strings.ToUpper(name[:1])+name[1:], admin)
		if err != nil {
			t.Fatalf("user %s: %v", name, err)
		}
		return u
	}
	f.owner, f.member, f.root, f.outsider = user("owner", false), user("member", false), user("root", true), user("outsider", false)
	org, err := f.acc.CreateOrg(ctx, f.owner, models.OrgTeam, fmt.Sprintf("Tianfu Robotics %d", n))
	if err != nil {
		t.Fatal(err)
	}
	f.org = org
	if err := db.Tx(ctx, func(tx *gorm.DB) error {
		return models.AddMember(tx, &models.Membership{OrgID: org.ID, UserID: f.member.ID, Role: models.RoleMember, CreatedAt: db.Now().UTC()})
	}); err != nil {
		t.Fatal(err)
	}
	oms, err := db.OrgsOfUser(ctx, f.owner.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, om := range oms {
		if om.Org.Personal {
			f.personal = om.Org.ID
		}
	}
	return f
}

// paid tops the organisation up by bank transfer, of which received
// arrives (an admin confirms it).
func (f *fixture) paid(orgID, asked, received int64) {
	f.t.Helper()
	ctx := context.Background()
	tp, _, err := f.wallet.StartTopup(ctx, f.owner, orgID, asked, models.MethodBank, "zh-CN")
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.wallet.ConfirmBankTransfer(ctx, f.root, tp.ID, received); err != nil {
		f.t.Fatal(err)
	}
}

// promo credits the organisation's wallet with promotional credit.
func (f *fixture) promo(orgID, fen int64) {
	f.t.Helper()
	err := f.db.Tx(context.Background(), func(tx *gorm.DB) error {
		return billing.CreditPromo(tx, orgID, fen, "promo_credit", "welcome", nil, nil, f.db.Now().UTC())
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// invoiceable reads what may still be invoiced.
func (f *fixture) invoiceable(orgID int64) int64 {
	f.t.Helper()
	n, err := f.svc.Invoiceable(context.Background(), orgID)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// normal is a valid request of a normal invoice of fen.
func normal(fen int64) invoices.Input {
	return invoices.Input{Kind: invoicestore.Normal, Title: "成都天府机器人有限公司", TaxpayerID: creditA, AmountFen: fen}
}

// special is a valid request of a special invoice of fen.
func special(fen int64) invoices.Input {
	return invoices.Input{Kind: invoicestore.Special, Title: "成都天府机器人有限公司", TaxpayerID: creditA, Address: "成都市高新区天府软件园 E 区",
		Phone: "028-8888 6666", Bank: "招商银行成都分行", BankAccount: "6214 8300 0000 1234", AmountFen: fen}
}

// mustRequest asks for an invoice that must be accepted.
func (f *fixture) mustRequest(u *models.User, orgID int64, in invoices.Input) *invoicestore.Invoice {
	f.t.Helper()
	inv, err := f.svc.Request(context.Background(), u, orgID, in)
	if err != nil {
		f.t.Fatalf("request %+v: %v", in, err)
	}
	return inv
}

// pdf is a small file that starts as a PDF does.
var pdf = []byte("%PDF-1.7\n% 数电票\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n")

// number is a 数电票 number ending in n.
func number(n int) string { return fmt.Sprintf("2651%016d", n) }

// today is the platform's day in Asia/Shanghai.
func (f *fixture) today() string { return f.db.Now().In(pricing.Shanghai).Format("2006-01-02") }

// mustIssue issues an invoice with the number ending in n.
func (f *fixture) mustIssue(id int64, n int) *invoicestore.Invoice {
	f.t.Helper()
	inv, err := f.svc.Issue(context.Background(), f.root, id, invoices.IssueInput{Number: number(n), IssueDate: f.today(), File: pdf})
	if err != nil {
		f.t.Fatalf("issue %d: %v", id, err)
	}
	return inv
}

// count is how many invoices the organisation has.
func (f *fixture) count(orgID int64) int {
	f.t.Helper()
	invs, err := invoicestore.OfOrg(context.Background(), f.db, orgID, 1000)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(invs)
}
