package identity

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"fmt"
	"log/slog"
	"math/big"
	"net/netip"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/locales"
	"suanli/models"
	"suanli/models/identitystore"
)

// The SMS codes' rules.
const (
	// CodeTTL is how long a code works after it was sent.
	CodeTTL = 10 * time.Minute
	// MaxCodeTries is how many wrong tries kill a code.
	MaxCodeTries = 5
	// PhoneGap is the least time between two codes to one number;
	// PhonePerDay codes go to one number in 24 hours, UserPerDay are
	// asked for by one user in 24 hours whatever the numbers, IPPerHour
	// from one client address (an IPv6 address's /64 network, what one
	// subscriber holds) in an hour.
	PhoneGap    = time.Minute
	PhonePerDay = 5
	UserPerDay  = 10
	IPPerHour   = 10
)

// purposeRealName is the codes' purpose (identitystore.SMSCode.Purpose).
const purposeRealName = "realname"

// SMS is one text message with a verification code.
type SMS struct {
	// Phone is the mainland mobile number (11 digits).
	Phone string
	// Body is the whole text, in Lang; a provider that sends by template
	// uses Code and Minutes instead.
	Body, Lang, Code string
	Minutes          int
}

// Sender sends text messages: the outbox (OutboxSender) unless an SMS
// provider is configured.
type Sender interface {
	Send(ctx context.Context, m SMS) error
}

// OutboxSender keeps messages in the SMS outbox, where platform admins
// (and the demo) read them on /admin/sms: what a deployment without an
// SMS provider does, as mail without SMTP waits in the mail outbox.
type OutboxSender struct{ DB *models.DB }

// Send keeps m in the outbox.
func (o OutboxSender) Send(ctx context.Context, m SMS) error {
	return identitystore.InsertOutbox(ctx, o.DB, &identitystore.OutboxSMS{ToPhone: m.Phone, Body: m.Body, CreatedAt: o.DB.Now().UTC()})
}

// RateLimited is a refused sending: too many codes to one number or from
// one address. RetryAfter is when the next one would be sent.
type RateLimited struct {
	Err        *apperr.Error
	RetryAfter time.Duration
}

func (e *RateLimited) Error() string { return e.Err.Error() }

// Unwrap makes the refusal an ERATELIMIT *apperr.Error.
func (e *RateLimited) Unwrap() error { return e.Err }

// rateLimited is the refusal with its wait, in whole seconds (at least
// 1); its message's arguments are the wait in seconds and in minutes.
func rateLimited(field, key string, wait time.Duration) *RateLimited {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	args := []any{secs, (secs + 59) / 60}
	return &RateLimited{RetryAfter: time.Duration(secs) * time.Second, Err: &apperr.Error{Code: apperr.ERATELIMIT, Field: field, Key: key,
		Args: args, Message: locales.T(locales.EN, key, args...)}}
}

// takeSending checks, in tx, the sending throttles of a user, a number
// and an address (locked first, so that requests at once count one after
// another): at most one code per PhoneGap and PhonePerDay per day to a
// number, UserPerDay per day for the user, IPPerHour an hour from an
// address. The code inserted after it in the same transaction, with
// addressKey(ip) as its address, is what counts next time.
func (s *Service) takeSending(tx *gorm.DB, userID int64, phone, ip string, now time.Time) error {
	ip = addressKey(ip)
	if err := identitystore.LockSending(tx, userID, phone, ip); err != nil {
		return err
	}
	n, oldest, newest, err := identitystore.CodesToPhone(tx, phone, now.Add(-24*time.Hour))
	if err != nil {
		return err
	}
	if n > 0 && now.Sub(newest) < PhoneGap {
		return rateLimited(FieldPhone, "realname.err.sms_gap", newest.Add(PhoneGap).Sub(now))
	}
	if n >= PhonePerDay {
		return rateLimited(FieldPhone, "realname.err.sms_day", oldest.Add(24*time.Hour).Sub(now))
	}
	n, oldest, _, err = identitystore.CodesOfUser(tx, userID, purposeRealName, now.Add(-24*time.Hour))
	if err != nil {
		return err
	}
	if n >= UserPerDay {
		return rateLimited("", "realname.err.sms_user", oldest.Add(24*time.Hour).Sub(now))
	}
	if ip == "" {
		return nil
	}
	n, oldest, _, err = identitystore.CodesFromIP(tx, ip, now.Add(-time.Hour))
	if err != nil {
		return err
	}
	if n >= IPPerHour {
		return rateLimited("", "realname.err.sms_ip", oldest.Add(time.Hour).Sub(now))
	}
	return nil
}

// addressKey is the address a client's codes are counted (and kept)
// under: an IPv4 address as it is, an IPv6 address as its /64 network
// (one subscriber's: a client that walks the addresses of its own
// network counts as one), an IPv4 address mapped into IPv6 as the IPv4
// one, anything else as given.
func addressKey(ip string) string {
	a, err := netip.ParseAddr(strings.TrimSpace(ip))
	if err != nil {
		return strings.TrimSpace(ip)
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

// send sends a stored code to its number in the user's language; when it
// cannot be sent the code is forgotten (it counts against no throttle)
// and the answer is EUNAVAILABLE.
func (s *Service) send(ctx context.Context, u *models.User, c *identitystore.SMSCode, code string) error {
	lang := u.MailLang()
	minutes := int(CodeTTL / time.Minute)
	m := SMS{Phone: c.Phone, Lang: lang, Code: code, Minutes: minutes, Body: locales.T(lang, "realname.sms.body", code, minutes)}
	if err := s.sender().Send(ctx, m); err != nil {
		slog.Error("sms: send failed", "user", u.ID, "phone", MaskPhone(c.Phone), "err", err)
		if derr := identitystore.DeleteCode(context.WithoutCancel(ctx), s.DB, c.ID); derr != nil {
			slog.Error("sms: forget the unsent code", "code_id", c.ID, "err", derr)
		}
		return &apperr.Error{Code: apperr.EUNAVAILABLE, Key: "realname.err.sms_failed", Message: "the text message could not be sent: try again in a minute"}
	}
	return nil
}

// newCode is six random digits.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

func sixDigits(s string) bool {
	if len(s) != 6 {
		return false
	}
	for i := 0; i < 6; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// codeHash is what is stored of a code: its keyed digest with the number
// it went to, so that the table alone cannot give the codes back.
func (s *Service) codeHash(phone, code string) string {
	return s.Ring.Digest([]byte("sms-code:" + phone + ":" + code))
}

// codeMatches compares in constant time, under every key of the ring: a
// code sent just before a key rotation still works.
func (s *Service) codeMatches(c *identitystore.SMSCode, code string) bool {
	ok := false
	for _, h := range s.Ring.Digests([]byte("sms-code:" + c.Phone + ":" + code)) {
		ok = hmac.Equal([]byte(c.CodeHash), []byte(h)) || ok
	}
	return ok
}
