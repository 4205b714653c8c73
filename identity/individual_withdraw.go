package identity

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/audit"
	"suanli/locales"
	"suanli/models"
	"suanli/models/identitystore"
)

// FieldConfirm is the withdrawal form's confirmation box.
const FieldConfirm = "confirm"

// WithdrawIndividual is the user's withdrawal of consent (PIPL arts. 15
// and 47, the privacy notice's promise): whatever their verification's
// status (pending, verified, rejected; an operator's too), its row is
// deleted with everything it held (the legal name, the sealed ID number,
// its mask and blind-index digest, the phone number, the consent record),
// the user's unused SMS codes are voided, the texts of the SMS outbox's
// messages to the numbers the user's codes went to are blanked (they
// held the codes), and the audit log records the withdrawal. The user is
// then unverified: the rent gate applies again, and the same ID number
// may be verified again, on this account or another. What stays is what
// the notice says stays: the audit log's entries (the platform's legal
// record), the SMS codes' rows (number, time and address, the code only
// as its keyed digest: the sending throttles count them) and the SMS
// outbox's rows without their texts (number and time: the record of what
// was sent).
//
// confirmed is the person's explicit confirmation (the page's box; an API
// call is its own): without it, EINVALID on FieldConfirm and nothing
// changes. No key is needed, so a server that lost its PII key can still
// delete. withdrew is false when the user held nothing (no error: the
// outcome asked for holds already).
func (s *Service) WithdrawIndividual(ctx context.Context, u *models.User, confirmed bool) (withdrew bool, err error) {
	if !confirmed {
		return false, apperr.Fields{apperr.Field(FieldConfirm, "realname.err.withdraw_confirm")}
	}
	now := s.now()
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := identitystore.LockIndividual(tx, u.ID)
		if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			return err
		}
		// Codes and their texts go even without a verification (a start
		// refused after its code was sent leaves them).
		if _, err := identitystore.VoidOpenCodes(tx, u.ID, purposeRealName, now); err != nil {
			return err
		}
		if _, err := identitystore.BlankOutboxOf(tx, u.ID, purposeRealName); err != nil {
			return err
		}
		if cur == nil {
			return nil
		}
		if withdrew, err = identitystore.DeleteIndividual(tx, u.ID); err != nil || !withdrew {
			return err
		}
		version, mask, phone := orDash(cur.ConsentVersion), orDash(cur.IDMask), orDash(MaskPhone(cur.Phone)) // an operator's: none of them
		return audit.Record(ctx, tx, audit.RealNameWithdrawn, subject(u.ID), nil,
			fmt.Sprintf("consent withdrawn (privacy notice %s, status was %s): name, ID number %s and phone %s deleted", version, cur.Status, mask, phone),
			locales.M("realname.audit.withdrawn", version, locales.M("realname.status."+cur.Status), mask, phone))
	})
	if err != nil {
		return false, err
	}
	return withdrew, nil
}

// orDash is s, or a dash for nothing (what an audit entry shows).
func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
