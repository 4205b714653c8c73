// Package invoicestore holds the records and queries of VAT invoices
// (发票, migration 00034): what an organisation asked to be invoiced, the
// number, date and file the tax system produced for it, and its end
// (作废, 红冲, cancelled, rejected). Package invoices owns the rules; this
// package only reads and writes.
package invoicestore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// Status is where an invoice is. requested and issued invoices are
// active: their amount is invoiced and can be neither invoiced again nor
// refunded. The other statuses are final.
type Status string

// The statuses of an invoice.
const (
	// Requested: waiting for a platform admin to issue or reject it.
	Requested Status = "requested"
	// Issued: the tax system issued it; its file can be downloaded.
	Issued Status = "issued"
	// Voided: issued, then voided (作废) in the tax system.
	Voided Status = "voided"
	// Reversed: issued, then cancelled by a red-letter invoice (红冲).
	Reversed Status = "reversed"
	// Cancelled: withdrawn by the organisation before it was issued.
	Cancelled Status = "cancelled"
	// Rejected: refused by a platform admin before it was issued.
	Rejected Status = "rejected"
)

// Statuses are every status, in the order of an invoice's life.
var Statuses = []Status{Requested, Issued, Voided, Reversed, Cancelled, Rejected}

// transitions is the one table of the moves an invoice may make.
var transitions = map[Status][]Status{
	Requested: {Issued, Cancelled, Rejected},
	Issued:    {Voided, Reversed},
}

// Can reports whether an invoice in s may move to to.
func (s Status) Can(to Status) bool {
	for _, t := range transitions[s] {
		if t == to {
			return true
		}
	}
	return false
}

// Active reports whether the invoice's amount counts as invoiced.
func (s Status) Active() bool { return s == Requested || s == Issued }

// HasFile reports whether an invoice in s has the tax system's file.
func (s Status) HasFile() bool { return s == Issued || s == Voided || s == Reversed }

// ActiveStatuses are the statuses whose amounts count as invoiced.
var ActiveStatuses = []Status{Requested, Issued}

// Kinds of invoice: both are 数电票 (fully digitalised e-invoices).
const (
	// Normal is 普通发票 (普票).
	Normal = "normal"
	// Special is 增值税专用发票 (专票): the buyer may deduct its input VAT.
	Special = "special"
)

// File types the tax system produces.
const (
	FilePDF = "pdf"
	FileOFD = "ofd"
)

// Invoice is an invoice as stored.
type Invoice struct {
	ID    int64
	OrgID int64
	// UserID is who asked for it.
	UserID int64
	Kind   string
	// What the buyer's side of the invoice says: 发票抬头, 纳税人识别号, and
	// for a special invoice the address, phone, bank and account.
	Title       string
	TaxpayerID  string
	Address     string
	Phone       string
	Bank        string
	BankAccount string
	// Email is where the buyer wants the invoice sent besides the
	// requester ("" none); Remark what it asked to be written (备注).
	Email     string
	Remark    string
	AmountFen int64
	Status    Status
	// Number is the tax system's invoice number (发票号码), nil until issued;
	// IssueDate its date, YYYY-MM-DD ("" until issued).
	Number    *string
	IssueDate string
	// FileType (FilePDF or FileOFD) and FileSize describe its file.
	FileType string
	FileSize int64
	// RedNumber is the red-letter invoice's number (红字发票号码) of a
	// reversed invoice.
	RedNumber *string
	// Reason is why it was rejected, voided or reversed.
	Reason    string
	CreatedAt time.Time
	IssuedAt  *time.Time
	IssuedBy  *int64
	EndedAt   *time.Time
	EndedBy   *int64
}

// File is an issued invoice's file.
type File struct {
	InvoiceID int64 `gorm:"primaryKey;autoIncrement:false"`
	Data      []byte
	SHA256    string `gorm:"column:sha256"`
	CreatedAt time.Time
}

// TableName is the invoices' files table.
func (File) TableName() string { return "invoice_files" }

// NumberOrEmpty is the invoice's number, or "".
func (i *Invoice) NumberOrEmpty() string {
	if i.Number == nil {
		return ""
	}
	return *i.Number
}

// RedNumberOrEmpty is the red-letter invoice's number, or "".
func (i *Invoice) RedNumberOrEmpty() string {
	if i.RedNumber == nil {
		return ""
	}
	return *i.RedNumber
}

// Insert stores a new invoice in tx.
func Insert(tx *gorm.DB, inv *Invoice) error { return tx.Create(inv).Error }

// notFound is the error for an invoice that does not exist.
func notFound() error { return apperr.NotFound("invoice") }

// ByID is an invoice (ENOTFOUND when there is none).
func ByID(ctx context.Context, db *models.DB, id int64) (*Invoice, error) {
	var inv Invoice
	err := db.W.WithContext(ctx).Where("id = ?", id).Take(&inv).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound()
	}
	return &inv, err
}

// Lock reads an invoice in tx, locked on PostgreSQL (SQLite has one
// writer), so that two admins acting on it at once act one after the other.
func Lock(tx *gorm.DB, id int64) (*Invoice, error) {
	var inv Invoice
	err := models.LockRow(tx).Where("id = ?", id).Take(&inv).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound()
	}
	return &inv, err
}

// OfOrg are an organisation's invoices, newest first, at most limit.
func OfOrg(ctx context.Context, db *models.DB, orgID int64, limit int) ([]Invoice, error) {
	var out []Invoice
	err := db.R.WithContext(ctx).Where("org_id = ?", orgID).Order("id DESC").Limit(limit).Find(&out).Error
	return out, err
}

// ActiveOf are an organisation's active invoices (requested or issued),
// oldest first, read in tx.
func ActiveOf(tx *gorm.DB, orgID int64) ([]Invoice, error) {
	var out []Invoice
	err := tx.Where("org_id = ? AND status IN ?", orgID, ActiveStatuses).Order("id").Find(&out).Error
	return out, err
}

// ActiveOfRead is ActiveOf outside a transaction, on the read pool.
func ActiveOfRead(ctx context.Context, db *models.DB, orgID int64) ([]Invoice, error) {
	return ActiveOf(db.R.WithContext(ctx), orgID)
}

// ActiveSum is what an organisation's active invoices add up to, read in
// tx (or any handle).
func ActiveSum(tx *gorm.DB, orgID int64) (int64, error) {
	var fen int64
	err := tx.Model(&Invoice{}).Where("org_id = ? AND status IN ?", orgID, ActiveStatuses).
		Select("COALESCE(SUM(amount_fen), 0)").Scan(&fen).Error
	return fen, err
}

// ActiveSumRead is ActiveSum outside a transaction, on the read pool.
func ActiveSumRead(ctx context.Context, db *models.DB, orgID int64) (int64, error) {
	return ActiveSum(db.R.WithContext(ctx), orgID)
}

// Move changes an invoice's status from from to to in tx with the other
// columns in set; changed is false when it was no longer in from.
func Move(tx *gorm.DB, id int64, from, to Status, set map[string]any) (changed bool, err error) {
	cols := map[string]any{"status": to}
	for k, v := range set {
		cols[k] = v
	}
	res := tx.Model(&Invoice{}).Where("id = ? AND status = ?", id, from).Updates(cols)
	return res.RowsAffected == 1, res.Error
}

// NumberTaken reports whether an invoice other than except already has
// the number, as its number or its red-letter number, read in tx.
func NumberTaken(tx *gorm.DB, number string, except int64) (bool, error) {
	var n int64
	err := tx.Model(&Invoice{}).Where("(number = ? OR red_number = ?) AND id <> ?", number, number, except).Count(&n).Error
	return n > 0, err
}

// InsertFile stores an issued invoice's file in tx.
func InsertFile(tx *gorm.DB, f *File) error { return tx.Create(f).Error }

// FileOf is an invoice's file (ENOTFOUND when it has none).
func FileOf(ctx context.Context, db *models.DB, invoiceID int64) (*File, error) {
	var f File
	err := db.R.WithContext(ctx).Where("invoice_id = ?", invoiceID).Take(&f).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("invoice file")
	}
	return &f, err
}

// Queue is the platform admins' list: the requested invoices first,
// oldest first (the order to work them in), then every other, newest
// first; total counts them all and waiting the requested ones.
func Queue(ctx context.Context, db *models.DB, offset, limit int) (out []Invoice, total, waiting int64, err error) {
	q := db.R.WithContext(ctx).Model(&Invoice{})
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, 0, err
	}
	if err := db.R.WithContext(ctx).Model(&Invoice{}).Where("status = ?", Requested).Count(&waiting).Error; err != nil {
		return nil, 0, 0, err
	}
	err = db.R.WithContext(ctx).
		Order(gorm.Expr("CASE WHEN status = ? THEN 0 ELSE 1 END, CASE WHEN status = ? THEN id ELSE -id END", Requested, Requested)).
		Offset(offset).Limit(limit).Find(&out).Error
	return out, total, waiting, err
}

// Month bounds one calendar month in Asia/Shanghai: its first and the
// next month's first day as dates (YYYY-MM-DD) and as instants.
type Month struct {
	FromDate, ToDate string
	From, To         time.Time
}

// InMonth are the invoices of a month, by their date: the issue date of
// an invoice that was issued (whatever became of it since), the day it
// was asked for of one that never was. orgID 0 is every organisation's.
// Ordered by id.
func InMonth(ctx context.Context, db *models.DB, orgID int64, m Month) ([]Invoice, error) {
	q := db.R.WithContext(ctx).Where("((issue_date >= ? AND issue_date < ?) OR (issue_date = '' AND created_at >= ? AND created_at < ?))",
		m.FromDate, m.ToDate, m.From.UTC(), m.To.UTC())
	if orgID != 0 {
		q = q.Where("org_id = ?", orgID)
	}
	var out []Invoice
	err := q.Order("id").Find(&out).Error
	return out, err
}
