package rentals

import (
	"fmt"
	"time"

	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
)

// lowBalanceMail tells a renter that less than an hour of balance is left.
func lowBalanceMail(u *models.User, r *models.Rental, bal int64, baseURL string, now time.Time) *models.OutboxMail {
	lang := u.MailLang()
	return &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: now,
		Subject: locales.T(lang, "mail.low_balance.subject"),
		Body:    locales.T(lang, "mail.low_balance.body", fmt.Sprint(r.ID), pricing.FenToYuanString(bal), fmt.Sprintf("%s/rentals/%d", baseURL, r.ID)),
	}
}
