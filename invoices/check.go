package invoices

import (
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/cnid"
	"suanli/models"
	"suanli/models/invoicestore"
	"suanli/pricing"
)

// Field names of a request's and an admin's problems: the API's JSON
// names, which the pages' forms use too.
const (
	FieldKind        = "kind"
	FieldTitle       = "title"
	FieldTaxpayerID  = "taxpayer_id"
	FieldAddress     = "address"
	FieldPhone       = "phone"
	FieldBank        = "bank"
	FieldBankAccount = "bank_account"
	FieldEmail       = "email"
	FieldRemark      = "remark"
	FieldAmount      = "amount_fen"
	FieldNumber      = "number"
	FieldIssueDate   = "issue_date"
	FieldFile        = "file"
	FieldRedNumber   = "red_number"
	FieldReason      = "reason"
	FieldMonth       = "month"
)

// Bounds of what an invoice holds.
const (
	// MaxTitle is the longest 发票抬头, in characters.
	MaxTitle = 100
	// MaxText bounds the address, the bank's name and the remark.
	MaxText = 200
	// MaxReason bounds an admin's reason.
	MaxReason = 500
	// NumberDigits is the length of a 数电票's number (发票号码).
	NumberDigits = 20
	// MaxFileBytes is the largest file an admin may upload (the tax
	// system's PDFs and OFDs are tens of KiB).
	MaxFileBytes = 10 << 20
)

// Input is an invoice as asked for.
type Input struct {
	// Kind is invoicestore.Normal (普票) or invoicestore.Special (专票).
	Kind string
	// Title is the 发票抬头: the buyer's name.
	Title string
	// TaxpayerID is the buyer's 纳税人识别号 (its unified social credit
	// code): required for a special invoice and for a company.
	TaxpayerID string
	// Address, Phone, Bank and BankAccount are required for a special
	// invoice, optional otherwise.
	Address, Phone, Bank, BankAccount string
	// Email and Remark are optional.
	Email, Remark string
	AmountFen     int64
}

// companyWords mark a title as a company's (or another unit's that has a
// credit code), which must then carry its taxpayer ID.
var companyWords = []string{"公司", "有限", "集团", "企业", "大学", "学院", "研究院", "研究所", "中心", "事务所", "合伙",
	"company", "co.", "ltd", "inc.", "corp", "llc", "limited", "university", "institute"}

// isCompany reports whether a title names a company or another unit
// rather than a person.
func isCompany(title string) bool {
	t := strings.ToLower(title)
	for _, w := range companyWords {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

var (
	phoneRe   = regexp.MustCompile(`^\+?[0-9][0-9 ()\-]{4,28}[0-9]$`)
	accountRe = regexp.MustCompile(`^[0-9][0-9 \-]{4,38}[0-9]$`)
	digitsRe  = regexp.MustCompile(`^[0-9]+$`)
)

// text checks one line of text: valid, no control characters, at most
// max characters; "" stays "" (required fields are checked apart).
func text(bad *apperr.Fields, field, s string, max int) string {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		*bad = append(*bad, apperr.Field(field, "invoice.err.text"))
		return s
	}
	if utf8.RuneCountInString(s) > max {
		*bad = append(*bad, apperr.Field(field, "invoice.err.too_long", max))
	}
	return s
}

// check validates a request of org and returns the invoice to store, or
// every problem at once (apperr.Fields, answered 422).
func check(org *models.Org, in Input) (*invoicestore.Invoice, error) {
	var bad apperr.Fields
	add := func(field, key string, args ...any) { bad = append(bad, apperr.Field(field, key, args...)) }
	inv := &invoicestore.Invoice{OrgID: org.ID, Kind: strings.TrimSpace(in.Kind), AmountFen: in.AmountFen}
	special := inv.Kind == invoicestore.Special
	if inv.Kind != invoicestore.Normal && !special {
		add(FieldKind, "invoice.err.kind")
	}
	inv.Title = text(&bad, FieldTitle, in.Title, MaxTitle)
	if inv.Title == "" {
		add(FieldTitle, "invoice.err.required")
	}
	tin := strings.TrimSpace(in.TaxpayerID)
	switch {
	case tin != "":
		code, err := cnid.CreditCode(tin)
		switch {
		case errors.Is(err, cnid.ErrLength):
			add(FieldTaxpayerID, "invoice.err.taxpayer_length")
		case errors.Is(err, cnid.ErrCharacter):
			add(FieldTaxpayerID, "invoice.err.taxpayer_character")
		case err != nil:
			add(FieldTaxpayerID, "invoice.err.taxpayer_check")
		}
		inv.TaxpayerID = code
	case special:
		add(FieldTaxpayerID, "invoice.err.taxpayer_special")
	case !org.Personal || isCompany(inv.Title):
		add(FieldTaxpayerID, "invoice.err.taxpayer_company")
	}
	inv.Address = text(&bad, FieldAddress, in.Address, MaxText)
	inv.Bank = text(&bad, FieldBank, in.Bank, MaxText)
	inv.Phone = strings.TrimSpace(in.Phone)
	if inv.Phone != "" && !phoneRe.MatchString(inv.Phone) {
		add(FieldPhone, "invoice.err.phone")
	}
	inv.BankAccount = strings.TrimSpace(in.BankAccount)
	if inv.BankAccount != "" && !accountRe.MatchString(inv.BankAccount) {
		add(FieldBankAccount, "invoice.err.bank_account")
	}
	if special {
		for _, f := range []struct{ name, v string }{{FieldAddress, inv.Address}, {FieldPhone, inv.Phone}, {FieldBank, inv.Bank}, {FieldBankAccount, inv.BankAccount}} {
			if f.v == "" {
				add(f.name, "invoice.err.special_required")
			}
		}
	}
	if e := strings.TrimSpace(in.Email); e != "" {
		addr, err := accounts.CheckEmail(FieldEmail, e)
		if err != nil {
			add(FieldEmail, "invoice.err.email")
		}
		inv.Email = addr
	}
	inv.Remark = text(&bad, FieldRemark, in.Remark, MaxText)
	if in.AmountFen <= 0 {
		add(FieldAmount, "invoice.err.amount")
	}
	if err := bad.OrNil(); err != nil {
		return nil, err
	}
	return inv, nil
}

// checkNumber checks a 数电票 number: exactly NumberDigits digits.
func checkNumber(bad *apperr.Fields, field, s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		*bad = append(*bad, apperr.Field(field, "invoice.err.required"))
	case len(s) != NumberDigits || !digitsRe.MatchString(s):
		*bad = append(*bad, apperr.Field(field, "invoice.err.number", NumberDigits))
	}
	return s
}

// checkReason checks an admin's reason; required says whether it may be
// empty.
func checkReason(bad *apperr.Fields, s string, required bool) string {
	s = text(bad, FieldReason, s, MaxReason)
	if required && s == "" {
		*bad = append(*bad, apperr.Field(FieldReason, "invoice.err.reason"))
	}
	return s
}

// FileType tells a PDF from an OFD by their first bytes (a PDF starts
// with %PDF-, an OFD is a zip archive, PK\x03\x04); "" for anything else.
func FileType(b []byte) string {
	switch {
	case len(b) >= 5 && string(b[:5]) == "%PDF-":
		return invoicestore.FilePDF
	case len(b) >= 4 && string(b[:4]) == "PK\x03\x04":
		return invoicestore.FileOFD
	}
	return ""
}

// checkFile checks an uploaded invoice file and returns its type.
func checkFile(bad *apperr.Fields, b []byte) string {
	switch {
	case len(b) == 0:
		*bad = append(*bad, apperr.Field(FieldFile, "invoice.err.file_missing"))
	case len(b) > MaxFileBytes:
		*bad = append(*bad, apperr.Field(FieldFile, "invoice.err.file_size", MaxFileBytes>>20))
	default:
		if t := FileType(b); t != "" {
			return t
		}
		*bad = append(*bad, apperr.Field(FieldFile, "invoice.err.file_type"))
	}
	return ""
}

// ParseMonth reads a month, YYYY-MM, in Asia/Shanghai.
func ParseMonth(s string) (invoicestore.Month, error) {
	t, err := time.ParseInLocation("2006-01", strings.TrimSpace(s), pricing.Shanghai)
	if err != nil || t.Year() < 2000 || t.Year() > 9998 {
		return invoicestore.Month{}, apperr.Field(FieldMonth, "invoice.err.month")
	}
	next := t.AddDate(0, 1, 0)
	return invoicestore.Month{FromDate: t.Format(dateLayout), ToDate: next.Format(dateLayout), From: t, To: next}, nil
}

// dateLayout is an invoice's date.
const dateLayout = "2006-01-02"

// Date is the day an invoice carries: its issue date once issued, else
// the day it was asked for (Asia/Shanghai); the monthly lists go by it.
func Date(inv *invoicestore.Invoice) string {
	if inv.IssueDate != "" {
		return inv.IssueDate
	}
	return inv.CreatedAt.In(pricing.Shanghai).Format(dateLayout)
}
