package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/audit"
	"suanli/cnid"
	"suanli/locales"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/models/ledger"
)

// NoticeVersion is the version of the privacy notice (个人信息保护告知) a
// verification is started under; the notice itself is the page's
// (locales realname.notice.*). A new text gets a new version, and each
// verification records the version its user consented to (a record
// keeps the version it agreed to when the text changes). Versions are the
// day the text was published, with ".N" for a later text of the same day.
// 2026-12-06.2: the rights and retention say what the code does (the
// withdrawal on the page and DELETE /api/v1/me/real-name; what is kept
// after it), with no promise of a support deadline or of account closure.
// 2026-12-06.3: the key is "not stored in the database" (on the embedded
// default it may sit beside the database file), and the SMS records kept
// after a withdrawal hold the codes as digests only, their texts blanked.
const NoticeVersion = "2026-12-06.3"

// KindIndividual is the kind of verification this file handles.
const KindIndividual = "individual"

// MaxNameRunes is the longest legal name accepted.
const MaxNameRunes = 50

// The fields of a verification's input, as the API and the page name them.
const (
	FieldKind     = "kind"
	FieldName     = "name"
	FieldIDNumber = "id_number"
	FieldPhone    = "phone"
	FieldConsent  = "consent"
	FieldCode     = "code"
	FieldReason   = "reason"
)

// IndividualInput is an individual's verification as submitted.
type IndividualInput struct {
	Kind, Name, IDNumber, Phone string
	// Consent: the user agreed to the privacy notice of NoticeVersion (a
	// page's checkbox; an API call is consent by its documentation).
	Consent bool
	// IP is the client's address, for the sending throttle.
	IP string
}

// View is a user's verification as its pages and the API show it: never
// the ID number itself.
type View struct {
	// Status is identitystore.Unverified, Pending, Verified or Rejected.
	Status string
	Method string
	// Name is the legal name given; IDMask the ID number masked; Phone
	// the number the code went to, PhoneMask it masked.
	Name, IDMask, Phone, PhoneMask string
	SubmittedAt                    *time.Time
	VerifiedAt, RejectedAt         *time.Time
	RejectReason                   string
	// HasSealedID: a full ID number is stored (an admin may read it).
	HasSealedID bool
	// ConsentVersion and ConsentAt are the notice agreed to, and when.
	ConsentVersion string
	ConsentAt      *time.Time
	// CodeExpiresAt is when the pending code stops working (nil: none).
	CodeExpiresAt *time.Time
}

// Verified reports whether the view is of a verified identity.
func (v View) Verified() bool { return v.Status == identitystore.Verified }

// unavailable is the answer when no PII key is configured.
func unavailable() error {
	return &apperr.Error{Code: apperr.EUNAVAILABLE, Key: "realname.err.unavailable",
		Message: "real-name verification is not available: this server has no key to store ID numbers (set SUANLI_PII_KEY or SUANLI_SECRET_KEY)"}
}

// Status returns the user's verification as the pages show it.
func (s *Service) Status(ctx context.Context, userID int64) (View, error) {
	in, err := identitystore.IndividualOf(ctx, s.DB, userID)
	if apperr.Code(err) == apperr.ENOTFOUND {
		return View{Status: identitystore.Unverified}, nil
	}
	if err != nil {
		return View{}, err
	}
	v := viewOf(in)
	if in.Status == identitystore.Pending {
		c, err := identitystore.NewestCode(ctx, s.DB, userID, purposeRealName)
		if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			return View{}, err
		}
		if err == nil && c.Phone == in.Phone && c.UsedAt == nil && c.ExpiresAt.After(s.now()) && c.FailedTries < MaxCodeTries {
			t := c.ExpiresAt.UTC()
			v.CodeExpiresAt = &t
		}
	}
	return v, nil
}

func viewOf(in *identitystore.Individual) View {
	return View{Status: in.Status, Method: in.Method, Name: in.LegalName, IDMask: in.IDMask, Phone: in.Phone, PhoneMask: MaskPhone(in.Phone),
		SubmittedAt: &in.SubmittedAt, VerifiedAt: in.VerifiedAt, RejectedAt: in.RejectedAt, RejectReason: in.RejectReason,
		HasSealedID: in.IDSealed != "", ConsentVersion: in.ConsentVersion, ConsentAt: in.ConsentAt}
}

// MaskPhone shows a mobile number's first three and last four digits
// (138****5678).
func MaskPhone(p string) string {
	if len(p) != 11 {
		return cnid.Mask(p)
	}
	return p[:3] + "****" + p[7:]
}

// StartIndividual starts (or starts again) the user's verification: it
// checks the name, the ID number (GB 11643) and the mobile number, sends
// an SMS code to the number, and then keeps the ID number sealed (with
// its mask and blind index) and records the consent to the notice. A
// user already verified gets ECONFLICT, as does an ID number verified on
// another account; sending too often is ERATELIMIT (*RateLimited).
//
// The code is stored (voiding the user's earlier codes) and sent before
// the verification is written, so that a send that fails leaves the
// user's verification as it was, with no code to confirm it by: a code
// to the earlier number never confirms the new one. A start whose code a
// newer start or resend voided while it was sent writes nothing
// (ECONFLICT, realname.err.superseded).
func (s *Service) StartIndividual(ctx context.Context, u *models.User, in IndividualInput) (View, error) {
	now := s.now()
	name, id, phone, err := checkIndividual(in, now)
	if err != nil {
		return View{}, err
	}
	if s.Ring == nil {
		return View{}, unavailable()
	}
	digests := s.digestsID(id)
	code, err := newCode()
	if err != nil {
		return View{}, err
	}
	var sent identitystore.SMSCode
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := mayStart(tx, u.ID, digests); err != nil {
			return err
		}
		if err := s.takeSending(tx, u.ID, phone, in.IP, now); err != nil {
			return err
		}
		sent = identitystore.SMSCode{UserID: u.ID, Purpose: purposeRealName, Phone: phone, IP: addressKey(in.IP), CodeHash: s.codeHash(phone, code),
			CreatedAt: now, ExpiresAt: now.Add(CodeTTL)}
		return newCodeIn(tx, &sent, now)
	})
	if err != nil {
		return View{}, err
	}
	if err := s.send(ctx, u, &sent, code); err != nil {
		return View{}, err
	}
	row := identitystore.Individual{UserID: u.ID, Status: identitystore.Pending, Method: identitystore.MethodSMS, LegalName: name,
		IDSealed: s.Ring.Seal([]byte(id), idContext(u.ID)), IDMask: cnid.Mask(id), IDDigest: &digests[0], Phone: phone,
		ConsentVersion: NoticeVersion, ConsentAt: &now, SubmittedAt: now, UpdatedAt: now}
	var refused error
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		// What was true before the sending is checked again: the user may
		// have been verified, the ID number verified elsewhere, or a later
		// start (or resend) may have voided this code meanwhile.
		refused = mayStart(tx, u.ID, digests)
		if _, ok := apperr.As(refused); refused != nil && !ok {
			return refused
		}
		if refused == nil {
			c, err := identitystore.LatestCode(tx, u.ID, purposeRealName)
			if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
				return err
			}
			if err != nil || c.ID != sent.ID || c.UsedAt != nil {
				refused = &apperr.Error{Code: apperr.ECONFLICT, Key: "realname.err.superseded",
					Message: "another verification was started meanwhile: use the code of the latest one"}
			}
		}
		if refused != nil {
			// The code sent confirms nothing; the refusal is answered after.
			_, err := identitystore.CodeUsed(tx, sent.ID, now)
			return err
		}
		if err := identitystore.SaveIndividual(tx, &row); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.RealNameSubmitted, subject(u.ID), nil,
			fmt.Sprintf("%s, ID %s, phone %s, privacy notice %s", name, row.IDMask, MaskPhone(phone), NoticeVersion),
			locales.M("realname.audit.submitted", name, row.IDMask, MaskPhone(phone), NoticeVersion))
	})
	if err != nil {
		return View{}, err
	}
	if refused != nil {
		return View{}, refused
	}
	v := viewOf(&row)
	v.CodeExpiresAt = &sent.ExpiresAt
	return v, nil
}

// mayStart refuses, in tx, a start by a user already verified or with an
// ID number (its digests under the ring's keys) verified on another
// account.
func mayStart(tx *gorm.DB, userID int64, digests []string) error {
	if cur, err := identitystore.LockIndividual(tx, userID); err == nil && cur.Status == identitystore.Verified {
		return alreadyVerified()
	} else if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
		return err
	}
	if taken, err := identitystore.VerifiedElsewhere(tx, digests, userID); err != nil {
		return err
	} else if taken {
		return idTaken()
	}
	return nil
}

// newCodeIn stores a new code in tx after voiding the user's earlier
// unused ones: only the newest code sent can confirm anything, even when
// it is not sent.
func newCodeIn(tx *gorm.DB, c *identitystore.SMSCode, now time.Time) error {
	if _, err := identitystore.VoidOpenCodes(tx, c.UserID, c.Purpose, now); err != nil {
		return err
	}
	return identitystore.InsertCode(tx, c)
}

// ResendCode sends a new code to the number of the user's pending
// verification (the old one stops working), throttled as a start is.
func (s *Service) ResendCode(ctx context.Context, u *models.User, ip string) (View, error) {
	if s.Ring == nil {
		return View{}, unavailable()
	}
	now := s.now()
	code, err := newCode()
	if err != nil {
		return View{}, err
	}
	var row *identitystore.Individual
	var sent identitystore.SMSCode
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		row, err = identitystore.LockIndividual(tx, u.ID)
		if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			return err
		}
		if err != nil || row.Status != identitystore.Pending {
			return &apperr.Error{Code: apperr.ECONFLICT, Key: "realname.err.nothing_pending", Message: "there is no verification waiting for a code: start one"}
		}
		if err := s.takeSending(tx, u.ID, row.Phone, ip, now); err != nil {
			return err
		}
		sent = identitystore.SMSCode{UserID: u.ID, Purpose: purposeRealName, Phone: row.Phone, IP: addressKey(ip), CodeHash: s.codeHash(row.Phone, code),
			CreatedAt: now, ExpiresAt: now.Add(CodeTTL)}
		return newCodeIn(tx, &sent, now)
	})
	if err != nil {
		return View{}, err
	}
	if err := s.send(ctx, u, &sent, code); err != nil {
		return View{}, err
	}
	v := viewOf(row)
	v.CodeExpiresAt = &sent.ExpiresAt
	return v, nil
}

// ConfirmIndividual ends the user's pending verification with the SMS
// code: verified. A wrong, expired, used or dead code is EINVALID on the
// field code (a wrong one counts as a try: after MaxCodeTries the code is
// dead); nothing pending is ECONFLICT, as is an ID number verified on
// another account meanwhile.
func (s *Service) ConfirmIndividual(ctx context.Context, u *models.User, code string) (View, error) {
	code = strings.TrimSpace(code)
	if !sixDigits(code) {
		return View{}, apperr.Fields{apperr.Field(FieldCode, "realname.err.code_format")}
	}
	if s.Ring == nil {
		return View{}, unavailable()
	}
	now := s.now()
	var row *identitystore.Individual
	var refused error
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		row, err = identitystore.LockIndividual(tx, u.ID)
		if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			return err
		}
		switch {
		case err != nil || row.Status == identitystore.Rejected:
			return &apperr.Error{Code: apperr.ECONFLICT, Key: "realname.err.nothing_pending", Message: "there is no verification waiting for a code: start one"}
		case row.Status == identitystore.Verified:
			return alreadyVerified()
		}
		c, err := identitystore.LatestCode(tx, u.ID, purposeRealName)
		if apperr.Code(err) == apperr.ENOTFOUND {
			return apperr.Fields{apperr.Field(FieldCode, "realname.err.code_expired")}
		}
		if err != nil {
			return err
		}
		switch {
		case c.Phone != row.Phone:
			// A code to another number than the verification's confirms
			// nothing (the number it went to is not the one on record).
			return apperr.Fields{apperr.Field(FieldCode, "realname.err.code_other_phone")}
		case c.UsedAt != nil:
			return apperr.Fields{apperr.Field(FieldCode, "realname.err.code_used")}
		case c.FailedTries >= MaxCodeTries:
			return apperr.Fields{apperr.Field(FieldCode, "realname.err.code_dead", MaxCodeTries)}
		case !now.Before(c.ExpiresAt):
			return apperr.Fields{apperr.Field(FieldCode, "realname.err.code_expired")}
		case !s.codeMatches(c, code):
			// The try is counted (committed); the refusal is answered after.
			if left := MaxCodeTries - c.FailedTries - 1; left > 0 {
				refused = apperr.Fields{apperr.Field(FieldCode, "realname.err.code_wrong", left)}
			} else {
				refused = apperr.Fields{apperr.Field(FieldCode, "realname.err.code_dead", MaxCodeTries)}
			}
			return identitystore.CodeTried(tx, c.ID)
		}
		if ok, err := identitystore.CodeUsed(tx, c.ID, now); err != nil || !ok {
			if err == nil {
				err = apperr.Fields{apperr.Field(FieldCode, "realname.err.code_used")}
			}
			return err
		}
		if digests, err := s.rowDigests(row); err != nil {
			return err
		} else if taken, err := identitystore.VerifiedElsewhere(tx, digests, u.ID); err != nil {
			return err
		} else if taken {
			return idTaken()
		}
		if err := identitystore.MarkVerified(tx, u.ID, now); err != nil {
			return err
		}
		row.Status, row.VerifiedAt = identitystore.Verified, &now
		return audit.Record(ctx, tx, audit.RealNameVerified, subject(u.ID), nil,
			fmt.Sprintf("%s, ID %s, phone %s confirmed by SMS", row.LegalName, row.IDMask, MaskPhone(row.Phone)),
			locales.M("realname.audit.verified", row.LegalName, row.IDMask, MaskPhone(row.Phone)))
	})
	if err != nil {
		if ledger.IsUniqueViolation(err) {
			return View{}, idTaken()
		}
		return View{}, err
	}
	if refused != nil {
		return View{}, refused
	}
	return viewOf(row), nil
}

// VerifyByOperator makes the user's identity verified on an operator's
// word (suanli admin create-user --verified-identity: operators' and test
// accounts): no ID number is stored, and the audit log says who did it
// (the operator at the console is the system). A user already verified
// is left as they are.
func (s *Service) VerifyByOperator(ctx context.Context, u *models.User) error {
	now := s.now()
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := identitystore.LockIndividual(tx, u.ID)
		if err == nil && cur.Status == identitystore.Verified {
			return nil
		}
		if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			return err
		}
		row := identitystore.Individual{UserID: u.ID, Status: identitystore.Verified, Method: identitystore.MethodOperator,
			LegalName: u.Name, SubmittedAt: now, VerifiedAt: &now, UpdatedAt: now}
		if err := identitystore.SaveIndividual(tx, &row); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.RealNameVerified, subject(u.ID), nil, "verified by an operator ("+u.Email+"): no ID number stored",
			locales.M("realname.audit.operator", u.Email))
	})
}

// RejectIndividual is a platform admin's rejection of a user's pending or
// verified identity, with the reason the user is shown. The user may
// start again.
func (s *Service) RejectIndividual(ctx context.Context, admin *models.User, userID int64, reason string) error {
	if admin == nil || !admin.PlatformAdmin {
		return &apperr.Error{Code: apperr.EFORBIDDEN, Message: "only platform admins review identities"}
	}
	reason = strings.TrimSpace(reason)
	if reason == "" || utf8.RuneCountInString(reason) > 500 || !utf8.ValidString(reason) {
		return apperr.Fields{apperr.Field(FieldReason, "realname.err.reason")}
	}
	now := s.now()
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := identitystore.LockIndividual(tx, userID)
		if err != nil {
			return err
		}
		if cur.Status != identitystore.Pending && cur.Status != identitystore.Verified {
			return &apperr.Error{Code: apperr.ECONFLICT, Key: "realname.err.not_rejectable", Message: "only a pending or verified identity can be rejected"}
		}
		if err := identitystore.MarkRejected(tx, userID, admin.ID, reason, now); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.RealNameRejected, subject(userID), nil, reason)
	})
}

// RevealID returns the user's full ID number to a platform admin, once,
// after writing who read whose into the audit log: every full read is
// audited. A verification with no ID stored (an operator's) is ENOTFOUND.
func (s *Service) RevealID(ctx context.Context, admin *models.User, userID int64) (string, error) {
	if admin == nil || !admin.PlatformAdmin {
		return "", &apperr.Error{Code: apperr.EFORBIDDEN, Message: "only platform admins read ID numbers"}
	}
	if s.Ring == nil {
		return "", unavailable()
	}
	in, err := identitystore.IndividualOf(ctx, s.DB, userID)
	if err != nil {
		return "", err
	}
	if in.IDSealed == "" {
		return "", apperr.NotFound("stored ID number")
	}
	plain, err := s.Ring.Open(in.IDSealed, idContext(userID))
	if err != nil {
		return "", fmt.Errorf("open the ID number of user %d: %w", userID, err)
	}
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		return audit.Record(ctx, tx, audit.RealNameIDRead, subject(userID), nil,
			fmt.Sprintf("%s (user %d) read the full ID number %s of user %d", admin.Email, admin.ID, in.IDMask, userID),
			locales.M("realname.audit.id_read", admin.Email, in.IDMask, userID))
	})
	if err != nil {
		return "", err
	}
	return string(plain), nil
}

// checkIndividual checks an individual's input, every problem at once,
// and returns the name, ID number and phone number normalised.
func checkIndividual(in IndividualInput, now time.Time) (name, id, phone string, err error) {
	var bad apperr.Fields
	if k := strings.TrimSpace(in.Kind); k != KindIndividual {
		bad = append(bad, apperr.Field(FieldKind, "realname.err.kind"))
	}
	name, ok := legalName(in.Name)
	if !ok {
		bad = append(bad, apperr.Field(FieldName, "realname.err.name", MaxNameRunes))
	}
	id, idErr := cnid.ResidentID(in.IDNumber, now)
	switch {
	case idErr == nil:
	case strings.TrimSpace(in.IDNumber) == "":
		bad = append(bad, apperr.Field(FieldIDNumber, "realname.err.id_missing"))
	case errors.Is(idErr, cnid.ErrLength):
		bad = append(bad, apperr.Field(FieldIDNumber, "realname.err.id_length"))
	case errors.Is(idErr, cnid.ErrCheck):
		bad = append(bad, apperr.Field(FieldIDNumber, "realname.err.id_check"))
	case errors.Is(idErr, cnid.ErrBirthDate):
		bad = append(bad, apperr.Field(FieldIDNumber, "realname.err.id_birth"))
	case errors.Is(idErr, cnid.ErrRegion):
		bad = append(bad, apperr.Field(FieldIDNumber, "realname.err.id_region"))
	default:
		bad = append(bad, apperr.Field(FieldIDNumber, "realname.err.id_character"))
	}
	phone, ok = MobileNumber(in.Phone)
	if !ok {
		bad = append(bad, apperr.Field(FieldPhone, "realname.err.phone"))
	}
	if !in.Consent {
		bad = append(bad, apperr.Field(FieldConsent, "realname.err.consent"))
	}
	return name, id, phone, bad.OrNil()
}

// legalName trims a legal name and checks it: 1 to MaxNameRunes
// characters, letters (Chinese characters included) with the middle dot
// of transliterated names (·) and single spaces between words.
func legalName(s string) (string, bool) {
	s = strings.Join(strings.Fields(s), " ")
	n := utf8.RuneCountInString(s)
	if n < 1 || n > MaxNameRunes || !utf8.ValidString(s) {
		return s, false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.Is(unicode.Mn, r) && r != '·' && r != '•' && r != '・' && r != ' ' {
			return s, false
		}
	}
	return s, true
}

// MobileNumber normalises a mainland mobile number: 11 digits starting 13
// to 19, with an optional +86 (or 0086) in front and spaces or hyphens
// anywhere; ok is false for anything else.
func MobileNumber(s string) (string, bool) {
	s = strings.NewReplacer(" ", "", "-", "", "\u00a0", "").Replace(strings.TrimSpace(s))
	for _, p := range []string{"+86", "0086"} {
		s = strings.TrimPrefix(s, p)
	}
	if len(s) != 11 || s[0] != '1' || s[1] < '3' || s[1] > '9' {
		return s, false
	}
	if _, err := strconv.ParseUint(s, 10, 64); err != nil {
		return s, false
	}
	return s, true
}

// idContext binds a sealed ID number to its user: moved to another row,
// it does not open.
func idContext(userID int64) []byte {
	return []byte("identity_individuals.id_sealed:user:" + strconv.FormatInt(userID, 10))
}

// digestID is the blind index of an ID number under the ring's current key.
func (s *Service) digestID(id string) string { return s.Ring.Digest([]byte("resident-id:" + id)) }

// digestsID is the blind index of an ID number under every key of the
// ring, the current key's first: another account's row may still hold
// an old key's digest until reseal-pii has run.
func (s *Service) digestsID(id string) []string { return s.Ring.Digests([]byte("resident-id:" + id)) }

// rowDigests is the blind index of a verification's ID number under every
// key of the ring (opened from its sealed value), and the row's own
// digest; none for a row without an ID number.
func (s *Service) rowDigests(in *identitystore.Individual) ([]string, error) {
	var out []string
	if in.IDSealed != "" {
		plain, err := s.Ring.Open(in.IDSealed, idContext(in.UserID))
		if err != nil {
			return nil, fmt.Errorf("open the ID number of user %d: %w", in.UserID, err)
		}
		out = s.digestsID(string(plain))
	}
	if in.IDDigest != nil && !slices.Contains(out, *in.IDDigest) {
		out = append(out, *in.IDDigest)
	}
	return out, nil
}

// subject is how the audit log names a user.
func subject(userID int64) string { return "user:" + strconv.FormatInt(userID, 10) }

func alreadyVerified() error {
	return &apperr.Error{Code: apperr.ECONFLICT, Key: "realname.err.already_verified", Message: "your real-name verification is already done"}
}

func idTaken() error {
	return &apperr.Error{Code: apperr.ECONFLICT, Field: FieldIDNumber, Key: "realname.err.id_taken",
		Message: "this ID number is already verified on another account: one person has one verified account (write to support if it is yours)"}
}
