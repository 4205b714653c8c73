// Package accounts holds the rules for people and organisations: sign-up,
// login and its throttle, email verification, password reset, API tokens,
// organisations, labs, invitations, and who may do what (authz.go).
package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/audit"
	"suanli/billing"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
)

// Service carries what the account rules need.
type Service struct {
	DB *models.DB
	// BaseURL prefixes the links in mails, e.g. "https://suanli.example".
	BaseURL string
	// EduSuffixes are the institutional email domain suffixes a lab may use.
	EduSuffixes []string
	// TrialCreditFen is granted once per organisation when its owner's
	// email is verified (0: none).
	TrialCreditFen int64
}

// DefaultEduSuffixes are the institutional suffixes accepted out of the box.
var DefaultEduSuffixes = []string{".edu.cn", ".edu", ".ac.cn", ".ac.uk"}

// Limits.
const (
	MinPasswordLen  = 10
	MaxPasswordLen  = 128
	MaxNameLen      = 100
	LoginWindow     = 15 * time.Minute
	MaxFailsAccount = 5
	MaxFailsAddress = 20
	VerifyTTL       = 72 * time.Hour
	ResetTTL        = time.Hour
	InviteTTL       = 7 * 24 * time.Hour
)

// FieldErrors is a form's list of problems, one per field at most.
type FieldErrors = apperr.Fields

func invalid(field, key string, args ...any) *apperr.Error {
	return &apperr.Error{Code: apperr.EINVALID, Field: field, Key: key, Args: args, Message: locales.T(locales.EN, key, args...)}
}

// CheckEmail validates an address and returns its stored form.
func CheckEmail(field, email string) (string, *apperr.Error) {
	// Check the bytes before lower-casing: ToLower turns invalid UTF-8 into
	// U+FFFD, which would make garbage look like an address.
	if !utf8.ValidString(email) || strings.ContainsRune(email, 0) {
		return "", invalid(field, "err.email")
	}
	email = models.NormalizeEmail(email)
	if email == "" {
		return "", invalid(field, "err.required")
	}
	a, err := mail.ParseAddress(email)
	at := strings.LastIndexByte(email, '@')
	if err != nil || a.Address != email || len(email) > 254 || at < 1 || !strings.Contains(email[at:], ".") || strings.HasSuffix(email, ".") {
		return "", invalid(field, "err.email")
	}
	return email, nil
}

var commonPasswords = []string{"1234567890", "12345678910", "password123", "qwertyuiop", "1q2w3e4r5t", "0123456789", "abcdefghij", "password1234", "iloveyou12", "woaini1314"}

// CheckPassword validates a new password against the rules.
func checkNewPassword(field, password, email string) *apperr.Error {
	n := utf8.RuneCountInString(password)
	switch {
	case !utf8.ValidString(password) || strings.ContainsRune(password, 0):
		return invalid(field, "err.text")
	case len(password) > MaxPasswordLen*4 || n > MaxPasswordLen:
		return invalid(field, "err.password_long", MaxPasswordLen)
	case n < MinPasswordLen:
		return invalid(field, "err.password_short", MinPasswordLen)
	case slices.Contains(commonPasswords, strings.ToLower(password)) || strings.EqualFold(password, email) ||
		oneCharacter(password):
		return invalid(field, "err.password_weak")
	}
	return nil
}

// oneCharacter reports whether the password repeats its first byte
// throughout ("aaaaaaaaaa"), which no length rule makes strong.
func oneCharacter(password string) bool {
	return password != "" && strings.Repeat(password[:1], len(password)) == password
}

func checkName(field, name string) (string, *apperr.Error) {
	name = strings.TrimSpace(name)
	if !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
		return "", invalid(field, "err.text")
	}
	if name == "" {
		return "", invalid(field, "err.required")
	}
	if utf8.RuneCountInString(name) > MaxNameLen || strings.ContainsAny(name, "\x00\r\n") {
		return "", invalid(field, "err.name_long", MaxNameLen)
	}
	return name, nil
}

// SignUpInput is the sign-up form. IP is the client's address, for the
// throttle.
type SignUpInput struct {
	Email, Password, Name, Lang, IP string
}

// SignUp creates a user with a personal organisation and mails the
// verification link, in one transaction; the user logs in by opening it.
// An address that already has an account is answered the same (nil, nil)
// and its owner is mailed instead, so that sign-up cannot tell anyone
// whether an address is registered. Attempts that pass validation are
// throttled per client address and per email (*Throttled).
func (s *Service) SignUp(ctx context.Context, in SignUpInput) (*models.User, error) {
	var errs FieldErrors
	email, e := CheckEmail("email", in.Email)
	if e != nil {
		errs = append(errs, e)
	}
	name, e := checkName("name", in.Name)
	if e != nil {
		errs = append(errs, e)
	}
	if e := checkNewPassword("password", in.Password, email); e != nil {
		errs = append(errs, e)
	}
	lang := locales.Normalize(in.Lang)
	if lang == "" {
		lang = locales.ZH
	}
	if err := errs.OrNil(); err != nil {
		return nil, err
	}
	now := s.DB.Now().UTC()
	rates := []rate{{throttleSignupIP, in.IP, SignupsPerAddress}, {throttleSignupEmail, email, SignupsPerEmail}}
	if err := s.checkRates(ctx, now, rates...); err != nil {
		return nil, err
	}
	// Hashed either way, so that the answer takes as long for an address
	// that has an account.
	hash, err := HashPassword(in.Password)
	if err != nil {
		return nil, err
	}
	var created *models.User
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := takeRates(tx, now, rates...); err != nil {
			return err
		}
		if have, err := models.UserByEmailIn(tx, email); err == nil {
			if !have.Verified() {
				// Not verified yet: the owner gets a fresh link, which (opened
				// away from the first sign-up) sets the password they choose.
				return s.mailLink(tx, have.Lang, have.Email, models.EmailToken{Purpose: models.TokenVerify, UserID: &have.ID, Email: have.Email, ExpiresAt: now.Add(VerifyTTL)},
					"signup_unverified", "/verify")
			}
			// Tell the owner, in their language; nothing else changes.
			return models.EnqueueMail(tx, &models.OutboxMail{ToAddr: have.Email, Lang: have.Lang, CreatedAt: now,
				Subject: locales.T(have.Lang, "mail.signup_exists.subject"),
				Body:    locales.T(have.Lang, "mail.signup_exists.body", strings.TrimRight(s.BaseURL, "/")+"/login", strings.TrimRight(s.BaseURL, "/")+"/password/forgot")})
		} else if apperr.Code(err) != apperr.ENOTFOUND {
			return err
		}
		u := &models.User{Email: email, Name: name, Lang: lang, PasswordHash: hash, CreatedAt: now}
		if err := models.InsertUser(tx, u); err != nil {
			return err
		}
		if err := createPersonalOrg(tx, u, now); err != nil {
			return err
		}
		created = u
		return s.mailLink(tx, u.Lang, u.Email, models.EmailToken{Purpose: models.TokenVerify, UserID: &u.ID, Email: u.Email, ExpiresAt: now.Add(VerifyTTL)}, "verify", "/verify")
	})
	if err != nil {
		if ae, ok := apperr.As(err); ok && ae.Code == apperr.ECONFLICT {
			// Two sign-ups of one new address at once: the second is answered
			// as the first.
			return nil, nil
		}
		return nil, err
	}
	if created != nil {
		slog.Info("user signed up", "user", created.ID)
	}
	return created, nil
}

func createPersonalOrg(tx *gorm.DB, u *models.User, now time.Time) error {
	org := &models.Org{Kind: models.OrgTeam, Name: u.Name, Personal: true, Status: models.OrgActive, CreatedAt: now}
	if err := models.InsertOrg(tx, org); err != nil {
		return err
	}
	return models.AddMember(tx, &models.Membership{OrgID: org.ID, UserID: u.ID, Role: models.RoleOwner, CreatedAt: now})
}

// mailLink stores a one-time token and writes its mail to the outbox, in tx.
func (s *Service) mailLink(tx *gorm.DB, lang, to string, t models.EmailToken, kind, path string, args ...any) error {
	return s.mailTokenLink(tx, lang, to, &t, kind, path, args...)
}

// mailTokenLink is mailLink for a caller that needs the token row it
// inserted (its id): t is filled in.
func (s *Service) mailTokenLink(tx *gorm.DB, lang, to string, t *models.EmailToken, kind, path string, args ...any) error {
	plain, hash := newToken()
	t.TokenHash, t.CreatedAt = hash, s.DB.Now().UTC()
	if err := models.InsertEmailToken(tx, t); err != nil {
		return err
	}
	link := strings.TrimRight(s.BaseURL, "/") + path + "?token=" + plain
	body := locales.T(lang, "mail."+kind+".body", append([]any{link}, args...)...)
	return models.EnqueueMail(tx, &models.OutboxMail{
		ToAddr: to, Subject: locales.T(lang, "mail."+kind+".subject"), Body: body, Lang: lang, CreatedAt: t.CreatedAt,
	})
}

// ErrThrottled is returned (wrapped in *Throttled) for a throttled login,
// sign-up or mail.
var ErrThrottled = errors.New("too many attempts")

// Throttled says how long a throttled attempt must wait. Key is the
// message's catalogue key (failed logins, or too many requests).
type Throttled struct {
	RetryAfter time.Duration
	Key        string
}

func (t *Throttled) Error() string {
	return fmt.Sprintf("too many attempts; retry in %s", t.RetryAfter)
}

// MessageKey is the catalogue key of the message to show.
func (t *Throttled) MessageKey() string {
	if t.Key == "" {
		return "err.throttled"
	}
	return t.Key
}

// Unwrap lets errors.Is(err, ErrThrottled) work.
func (t *Throttled) Unwrap() error { return ErrThrottled }

// Login checks a password. After MaxFailsAccount wrong passwords for one
// account, or MaxFailsAddress from one address, within LoginWindow, every
// attempt is refused with *Throttled until the window has passed. A wrong
// email or password is the same EINVALID error, so accounts cannot be probed.
func (s *Service) Login(ctx context.Context, email, password, ip string) (*models.User, error) {
	now := s.DB.Now().UTC()
	if _, e := CheckEmail("email", email); e != nil {
		// Not an address, so not an account: answer as for a wrong
		// password, without touching the database.
		return nil, FieldErrors{invalid("password", "err.login")}
	}
	email = models.NormalizeEmail(email)
	if err := s.throttle(ctx, email, ip, now); err != nil {
		return nil, err
	}
	bad := FieldErrors{invalid("password", "err.login")}
	if len(password) > MaxPasswordLen*4 {
		return nil, bad
	}
	u, err := s.DB.UserByEmail(ctx, email)
	if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
		return nil, err
	}
	hash := dummyHash
	if u != nil {
		hash = u.PasswordHash
	}
	if !CheckPassword(hash, password) || u == nil {
		if err := s.DB.RecordLoginFailure(ctx, email, ip, now); err != nil {
			return nil, err
		}
		return nil, bad
	}
	if Suspended(u) {
		return nil, FieldErrors{&apperr.Error{Code: apperr.EINVALID, Field: "password", Key: "err.account_suspended", Message: ErrAccountSuspended().Message}}
	}
	return u, nil
}

// throttle refuses an attempt, with *Throttled, while the account has
// MaxFailsAccount failures in the window or the address (when given)
// MaxFailsAddress; it says how long until the oldest failure that blocks
// leaves the window.
func (s *Service) throttle(ctx context.Context, email, ip string, now time.Time) error {
	byEmail, byIP, oldestEmail, oldestIP, err := s.DB.CountLoginFailures(ctx, email, ip, now.Add(-LoginWindow))
	if err != nil {
		return err
	}
	if ip == "" {
		byIP = 0
	}
	if byEmail < MaxFailsAccount && byIP < MaxFailsAddress {
		return nil
	}
	oldest := oldestEmail
	if byIP >= MaxFailsAddress && (byEmail < MaxFailsAccount || oldestIP.After(oldest)) {
		oldest = oldestIP
	}
	return &Throttled{RetryAfter: max(oldest.Add(LoginWindow).Sub(now), time.Second)}
}

// VerifyEmail uses a verification link. The first verification retires
// the user's other verification links and ends every session opened
// before it (someone who signed up with another person's address and
// logged in with their own password is logged out once the owner proves
// the address); the caller logs its own browser in again with the epoch in
// the user returned.
func (s *Service) VerifyEmail(ctx context.Context, token string) (*models.User, error) {
	return s.verify(ctx, token, nil)
}

// VerifyWithPassword uses a verification link opened where the person did
// not sign up (another device, or someone else's browser): it sets the
// password they choose as it verifies, so that whoever typed a password at
// sign-up, if not the address's owner, is locked out.
func (s *Service) VerifyWithPassword(ctx context.Context, token, password string) (*models.User, error) {
	return s.verify(ctx, token, &password)
}

func (s *Service) verify(ctx context.Context, token string, password *string) (*models.User, error) {
	var u *models.User
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		now := s.DB.Now().UTC()
		t, err := models.UseEmailToken(tx, models.TokenVerify, hashToken(token), now)
		if err != nil {
			return err
		}
		if t.UserID == nil {
			return invalid("token", "err.link_invalid")
		}
		if u, err = models.UserByIDIn(tx, *t.UserID); err != nil {
			return err
		}
		if password != nil {
			if e := checkNewPassword("password", *password, u.Email); e != nil {
				return FieldErrors{e}
			}
			hash, err := HashPassword(*password)
			if err != nil {
				return err
			}
			if err := models.SetUserPassword(tx, u.ID, hash); err != nil {
				return err
			}
		}
		first, err := models.MarkEmailVerified(tx, u.ID, now)
		if err != nil {
			return err
		}
		if first || password != nil {
			if err := models.RetireEmailTokens(tx, models.TokenVerify, u.ID, now); err != nil {
				return err
			}
			if _, err := models.BumpSessionEpoch(tx, u.ID); err != nil {
				return err
			}
		}
		if first {
			if err := s.grantTrial(tx, u.ID, now); err != nil {
				return err
			}
		}
		u, err = models.UserByIDIn(tx, u.ID)
		return err
	})
	return u, err
}

// VerifyLinkUser returns the id of the user a verification link is for,
// without using it (EINVALID for a link that is invalid, used or expired).
func (s *Service) VerifyLinkUser(ctx context.Context, token string) (int64, error) {
	t, err := s.DB.PeekEmailToken(ctx, models.TokenVerify, hashToken(token), s.DB.Now().UTC())
	if err != nil {
		return 0, err
	}
	if t.UserID == nil {
		return 0, invalid("token", "err.link_invalid")
	}
	return *t.UserID, nil
}

// grantTrial posts the trial credit once per person, to the user's
// personal organisation, when their email is first verified (the ledger's
// idempotency key enforces "once"). Organisations are not a source of
// credit: a user who creates a hundred gets no more.
func (s *Service) grantTrial(tx *gorm.DB, userID int64, now time.Time) error {
	if s.TrialCreditFen <= 0 {
		return nil
	}
	orgID, err := models.PersonalOrgOf(tx, userID)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("trial:user:%d", userID)
	err = billing.CreditPromo(tx, orgID, s.TrialCreditFen, "trial_credit", "trial credit", &key, nil, now, locales.M("memo.trial_credit"))
	if errors.Is(err, ledger.ErrDuplicate) {
		return nil
	}
	return err
}

// ResendVerification mails a new verification link, at most
// ResendsPerUser times an hour (*Throttled).
func (s *Service) ResendVerification(ctx context.Context, u *models.User) error {
	if u.Verified() {
		return nil
	}
	now := s.DB.Now().UTC()
	r := rate{throttleResendUser, fmt.Sprint(u.ID), ResendsPerUser}
	if err := s.checkRates(ctx, now, r); err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := takeRates(tx, now, r); err != nil {
			return err
		}
		return s.mailLink(tx, u.Lang, u.Email, models.EmailToken{Purpose: models.TokenVerify, UserID: &u.ID, Email: u.Email, ExpiresAt: now.Add(VerifyTTL)}, "verify", "/verify")
	})
}

// RequestPasswordReset mails a reset link if the address has an account;
// the new link makes every older one of the user worthless. It answers
// the same either way, so addresses cannot be probed, and is throttled
// per email and per client address whether or not the address has an
// account (*Throttled).
func (s *Service) RequestPasswordReset(ctx context.Context, email, ip string) error {
	email, e := CheckEmail("email", email)
	if e != nil {
		return FieldErrors{e}
	}
	now := s.DB.Now().UTC()
	rates := []rate{{throttleResetEmail, email, ResetsPerEmail}, {throttleResetIP, ip, ResetsPerAddress}}
	if err := s.checkRates(ctx, now, rates...); err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := takeRates(tx, now, rates...); err != nil {
			return err
		}
		u, err := models.UserByEmailIn(tx, email)
		if apperr.Code(err) == apperr.ENOTFOUND {
			return nil
		}
		if err != nil {
			return err
		}
		if err := models.RetireEmailTokens(tx, models.TokenReset, u.ID, now); err != nil {
			return err
		}
		return s.mailLink(tx, u.Lang, u.Email, models.EmailToken{Purpose: models.TokenReset, UserID: &u.ID, Email: u.Email, ExpiresAt: now.Add(ResetTTL)}, "reset", "/password/reset")
	})
}

// ResetPassword uses a reset link to set a new password and ends every
// session of the user (the caller logs this one in again). It also proves
// the address, so it verifies the email.
func (s *Service) ResetPassword(ctx context.Context, token, password string) (*models.User, error) {
	var u *models.User
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		now := s.DB.Now().UTC()
		t, err := models.UseEmailToken(tx, models.TokenReset, hashToken(token), now)
		if err != nil {
			return err
		}
		if u, err = models.UserByIDIn(tx, *t.UserID); err != nil {
			return err
		}
		if e := checkNewPassword("password", password, u.Email); e != nil {
			return FieldErrors{e}
		}
		hash, err := HashPassword(password)
		if err != nil {
			return err
		}
		if err := models.SetUserPassword(tx, u.ID, hash); err != nil {
			return err
		}
		// Whoever knew the old password is logged out everywhere.
		if u.SessionEpoch, err = models.BumpSessionEpoch(tx, u.ID); err != nil {
			return err
		}
		first, err := models.MarkEmailVerified(tx, u.ID, now)
		if err != nil || !first {
			return err
		}
		return s.grantTrial(tx, u.ID, now)
	})
	return u, err
}

// ChangePassword replaces the password after checking the current one,
// and ends the user's other sessions (u.SessionEpoch is the new epoch,
// for the caller's own session).
func (s *Service) ChangePassword(ctx context.Context, u *models.User, current, next string) error {
	// Guesses at the current password count as failed logins, so a
	// borrowed session cannot be used to find the password.
	now := s.DB.Now().UTC()
	if err := s.throttle(ctx, u.Email, "", now); err != nil {
		return err
	}
	if len(current) > MaxPasswordLen*4 || !CheckPassword(u.PasswordHash, current) {
		if err := s.DB.RecordLoginFailure(ctx, u.Email, "", now); err != nil {
			return err
		}
		return FieldErrors{invalid("current_password", "err.password_wrong")}
	}
	if e := checkNewPassword("password", next, u.Email); e != nil {
		return FieldErrors{e}
	}
	hash, err := HashPassword(next)
	if err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := models.SetUserPassword(tx, u.ID, hash); err != nil {
			return err
		}
		// Every other session ends; the caller renews this one.
		u.SessionEpoch, err = models.BumpSessionEpoch(tx, u.ID)
		return err
	})
}

// EndOtherSessions logs the user out of every session but the one the
// caller renews with the epoch returned in u.
func (s *Service) EndOtherSessions(ctx context.Context, u *models.User) error {
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		u.SessionEpoch, err = models.BumpSessionEpoch(tx, u.ID)
		return err
	})
}

// CreateUser is the operator's way in (suanli admin create-user): a user
// with a verified email and a personal organisation, optionally a platform
// admin.
func (s *Service) CreateUser(ctx context.Context, email, password, name string, admin bool) (*models.User, error) {
	var errs FieldErrors
	email, e := CheckEmail("email", email)
	if e != nil {
		errs = append(errs, e)
	}
	if e := checkNewPassword("password", password, email); e != nil {
		errs = append(errs, e)
	}
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	if err := errs.OrNil(); err != nil {
		return nil, err
	}
	hash, err := HashPassword(password)
	if err != nil {
		return nil, err
	}
	now := s.DB.Now().UTC()
	u := &models.User{Email: email, Name: name, Lang: locales.ZH, PasswordHash: hash, EmailVerifiedAt: &now, PlatformAdmin: admin, CreatedAt: now}
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := models.InsertUser(tx, u); err != nil {
			return err
		}
		if admin {
			if err := audit.Record(ctx, tx, audit.RoleChanged, fmt.Sprintf("user:%d", u.ID), nil, "created as platform admin: "+email,
				locales.M("audit.admin_created", email)); err != nil {
				return err
			}
		}
		return createPersonalOrg(tx, u, now)
	})
	return u, err
}
