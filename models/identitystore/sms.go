package identitystore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/platform"
)

// SMSCode is a verification code sent by SMS: only its keyed digest is
// kept. Its rows are also what the sending throttles count.
type SMSCode struct {
	ID          int64
	UserID      int64
	Purpose     string
	Phone       string
	IP          string `gorm:"column:ip"`
	CodeHash    string
	FailedTries int
	CreatedAt   time.Time
	ExpiresAt   time.Time
	UsedAt      *time.Time
}

// TableName is the codes' table.
func (SMSCode) TableName() string { return "sms_codes" }

// LockSending holds, until tx ends, the sending throttles of a user, a
// phone number and a client address, so that codes asked for at once are
// counted one after another (PostgreSQL's advisory locks, taken in one
// order; SQLite's one writer does that already).
func LockSending(tx *gorm.DB, userID int64, phone, ip string) error {
	if err := platform.LockThrottle(tx, "sms_user", strconv.FormatInt(userID, 10)); err != nil {
		return err
	}
	if err := platform.LockThrottle(tx, "sms_phone", phone); err != nil {
		return err
	}
	if ip == "" {
		return nil
	}
	return platform.LockThrottle(tx, "sms_ip", ip)
}

// CodesToPhone counts the codes sent to a phone number since the time
// given, and returns the oldest and the newest of them (zero when none).
func CodesToPhone(tx *gorm.DB, phone string, since time.Time) (int64, time.Time, time.Time, error) {
	return countCodes(tx, since, "phone = ?", phone)
}

// CodesOfUser counts the codes of a purpose a user asked for since the
// time given, whatever the numbers, and returns the oldest and the newest
// of them.
func CodesOfUser(tx *gorm.DB, userID int64, purpose string, since time.Time) (int64, time.Time, time.Time, error) {
	return countCodes(tx, since, "user_id = ? AND purpose = ?", userID, purpose)
}

// CodesFromIP counts the codes asked for from a client address since the
// time given, and returns the oldest and the newest of them.
func CodesFromIP(tx *gorm.DB, ip string, since time.Time) (int64, time.Time, time.Time, error) {
	return countCodes(tx, since, "ip = ?", ip)
}

func countCodes(tx *gorm.DB, since time.Time, where string, args ...any) (int64, time.Time, time.Time, error) {
	q := func() *gorm.DB { return tx.Model(&SMSCode{}).Where(where, args...).Where("created_at > ?", since) }
	var n int64
	if err := q().Count(&n).Error; err != nil || n == 0 {
		return n, time.Time{}, time.Time{}, err
	}
	// MIN and MAX over a timestamp come back as text on SQLite: the
	// first and last rows by time are read instead.
	var first, last SMSCode
	if err := q().Order("created_at, id").First(&first).Error; err != nil {
		return 0, time.Time{}, time.Time{}, err
	}
	if err := q().Order("created_at DESC, id DESC").First(&last).Error; err != nil {
		return 0, time.Time{}, time.Time{}, err
	}
	return n, first.CreatedAt, last.CreatedAt, nil
}

// InsertCode stores a code in tx.
func InsertCode(tx *gorm.DB, c *SMSCode) error { return tx.Create(c).Error }

// DeleteCode forgets a code that could not be sent (it counts against no
// throttle then).
func DeleteCode(ctx context.Context, db *models.DB, id int64) error {
	return db.W.WithContext(ctx).Delete(&SMSCode{}, id).Error
}

// LatestCode returns the user's newest code of a purpose, locked in tx on
// PostgreSQL, or ENOTFOUND.
func LatestCode(tx *gorm.DB, userID int64, purpose string) (*SMSCode, error) {
	return latestCodeIn(models.LockRow(tx), userID, purpose)
}

func latestCodeIn(tx *gorm.DB, userID int64, purpose string) (*SMSCode, error) {
	var c SMSCode
	err := tx.Where("user_id = ? AND purpose = ?", userID, purpose).Order("id DESC").First(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("verification code")
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// NewestCode is LatestCode read outside a transaction, unlocked (what a
// page shows).
func NewestCode(ctx context.Context, db *models.DB, userID int64, purpose string) (*SMSCode, error) {
	return latestCodeIn(db.R.WithContext(ctx), userID, purpose)
}

// CodeTried counts a wrong try of a code in tx.
func CodeTried(tx *gorm.DB, id int64) error {
	return tx.Model(&SMSCode{}).Where("id = ?", id).Update("failed_tries", gorm.Expr("failed_tries + 1")).Error
}

// CodeUsed marks a code used in tx; it reports false when it was used
// already (by a confirmation at the same moment).
func CodeUsed(tx *gorm.DB, id int64, now time.Time) (bool, error) {
	res := tx.Model(&SMSCode{}).Where("id = ? AND used_at IS NULL", id).Update("used_at", now)
	return res.RowsAffected == 1, res.Error
}

// OutboxSMS is a text message kept for admins to read (and the demo)
// when no SMS provider is configured.
type OutboxSMS struct {
	ID        int64
	ToPhone   string
	Body      string
	CreatedAt time.Time
}

// TableName is the SMS outbox's table.
func (OutboxSMS) TableName() string { return "sms_outbox" }

// InsertOutbox keeps a message in the SMS outbox.
func InsertOutbox(ctx context.Context, db *models.DB, m *OutboxSMS) error {
	return db.W.WithContext(ctx).Create(m).Error
}

// BlankOutboxOf empties in tx the text of every SMS outbox message to a
// number the user's codes of a purpose went to (the texts held the
// codes): a withdrawal of consent. The rows stay, with the number and
// the time (the record of what was sent). It returns how many it blanked.
func BlankOutboxOf(tx *gorm.DB, userID int64, purpose string) (int64, error) {
	phones := tx.Session(&gorm.Session{NewDB: true}).Model(&SMSCode{}).Select("phone").Where("user_id = ? AND purpose = ?", userID, purpose)
	res := tx.Model(&OutboxSMS{}).Where("to_phone IN (?) AND body <> ''", phones).Update("body", "")
	return res.RowsAffected, res.Error
}

// OutboxPage returns one page of the SMS outbox, newest first, and its
// size; phone, when given, keeps only the messages to that number.
func OutboxPage(ctx context.Context, db *models.DB, phone string, page, per int) ([]OutboxSMS, int64, error) {
	tx := db.R.WithContext(ctx).Model(&OutboxSMS{})
	if phone != "" {
		tx = tx.Where("to_phone = ?", phone)
	}
	var total int64
	if err := tx.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	page, per = models.ClampPage(page, per, 200)
	var ms []OutboxSMS
	err := tx.Order("id DESC").Offset((page - 1) * per).Limit(per).Find(&ms).Error
	return ms, total, err
}
