package accountpages

import (
	"net/url"
	"strings"

	"suanli/locales"
	"suanli/views"
	"time"
)

// BankDetails is where bank transfers (对公转账) go.
type BankDetails struct {
	Bank        string `json:"bank"`
	AccountName string `json:"account_name"`
	Account     string `json:"account"`
	// Demo is true for the built-in example details: they say so.
	Demo bool `json:"demo"`
}

// WalletVM is the wallet page's view model.
type WalletVM struct {
	Org           Org
	BalanceFen    int64
	RefundableFen int64
	Topups        []Topup
	Refunds       []Refund
	Ledger        []LedgerLine
	// Kinds are the ledger's entry kinds, for the filter.
	Kinds          []string
	Topup, Refund  views.Form
	Filter         views.Form
	CardConfigured bool
	Bank           BankDetails
	// Billing is the invoice details and hourly cap form, for admins.
	Billing   views.Form
	CanManage bool
	// Alerts are the runway and the spending alerts.
	Alerts AlertsVM
}

// TopupVM is a top-up's status and receipt page.
type TopupVM struct {
	Topup    Topup
	Org      Org
	Returned string // "success" or "cancel" when back from Stripe
	Bank     BankDetails
}

// Topup is a top-up as the wallet and receipt pages show it.
type Topup struct {
	ID                        int64
	Reference, Method, Status string
	AmountFen                 int64
	// ReceivedFen is what arrived, when it differs from what was asked.
	ReceivedFen *int64
	PaidAt      *time.Time
	Note        string
}

// Refund is a refund line on the wallet page.
type Refund struct {
	AmountFen      int64
	Method, Status string
}

// LedgerLine is one entry of the wallet's ledger.
type LedgerLine struct {
	CreatedAt time.Time
	Kind      string
	Memo      string
	MemoMsg   locales.Msg
	AmountFen int64
}

func signedYuan(fen int64) string {
	if fen > 0 {
		return "+" + views.Yuan(fen)
	}
	return views.Yuan(fen)
}

func receivedOr(t Topup) int64 {
	if t.ReceivedFen != nil {
		return *t.ReceivedFen
	}
	return t.AmountFen
}

// csvQuery keeps the ledger filters on the CSV link.
func csvQuery(f views.Form) string {
	v := url.Values{}
	for _, k := range []string{"kind", "from", "to"} {
		if s := f.Get(k); s != "" && f.Err(k) == "" {
			v.Set(k, s)
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// memoText is a ledger line's memo in the reader's language: its message,
// or the stored memo of a line from before messages were stored, unless
// that only repeats the line's kind ("trial credit" after "Trial credit").
func memoText(vc views.Ctx, l LedgerLine) string {
	if !l.MemoMsg.IsZero() {
		return l.MemoMsg.Text(vc.Lang)
	}
	kind := "ledger.kind." + l.Kind
	if strings.EqualFold(strings.TrimSpace(l.Memo), locales.T(locales.EN, kind)) || strings.EqualFold(l.Memo, strings.ReplaceAll(l.Kind, "_", " ")) {
		return ""
	}
	return l.Memo
}
