// Package identity is real-name verification (实名认证, issue 21): mainland
// China's Cybersecurity Law requires a network service to know who its
// users are. An individual gives a legal name, a resident ID number and a
// mobile number that an SMS code confirms (individual.go, sms.go); an
// organisation is reviewed by a platform admin (org*.go). ID numbers are
// kept sealed under the PII key ring, shown masked, read in full only by
// the admin review, and every full read is audited. A user may withdraw
// their consent at any time, which deletes their verification
// (individual_withdraw.go). Renting needs a
// verified user unless the rental is paid entirely from trial credit
// (gate.go).
package identity

import (
	"context"
	"time"

	"suanli/config"
	"suanli/models"
	"suanli/secrets"
)

// Service verifies identities and gates renting on them.
type Service struct {
	DB *models.DB
	// Ring seals personal information (ID numbers); nil (no key
	// configured): nothing personal can be stored, and starting a
	// verification answers EUNAVAILABLE.
	Ring *secrets.Ring
	// Mode is config.RealNameRequired or config.RealNameOff (--real-name);
	// empty is required, the safe default.
	Mode string
	// SMS sends verification codes; nil: the SMS outbox (OutboxSender),
	// read on /admin/sms.
	SMS Sender
}

// Required reports whether renting needs real-name verification.
func (s *Service) Required() bool { return s.Mode != config.RealNameOff }

// now is the service's clock: the database's, which tests replace.
func (s *Service) now() time.Time { return s.DB.Now().UTC() }

// sender is the configured SMS sender or the outbox.
func (s *Service) sender() Sender {
	if s.SMS != nil {
		return s.SMS
	}
	return OutboxSender{DB: s.DB}
}

// resealers are the kinds of sealed personal information Reseal walks,
// each resealing its values under the ring's current key and computing
// its blind indexes again (a kind of values added later adds its entry
// here).
func (s *Service) resealers() []resealer {
	return []resealer{
		{Name: "individuals", Run: s.resealIndividuals},
		{Name: "organisation licences", Run: func(ctx context.Context, c *ResealCount) (err error) {
			c.Seen, c.Resealed, err = s.ResealOrgLicences(ctx)
			return err
		}},
	}
}

// resealer reseals one kind of sealed values, counting into its
// ResealCount what it looked at, sealed again and found duplicated.
type resealer struct {
	Name string
	Run  func(ctx context.Context, count *ResealCount) error
}
