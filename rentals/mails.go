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
	lang := u.Lang
	if lang == "" {
		lang = locales.ZH
	}
	return &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: now,
		Subject: locales.T(lang, "mail.low_balance.subject"),
		Body:    locales.T(lang, "mail.low_balance.body", fmt.Sprint(r.ID), pricing.FenToYuanString(bal), fmt.Sprintf("%s/rentals/%d", baseURL, r.ID)),
	}
}

// volumeDeletionMail tells a volume's owner when it will be deleted
// unless its rental starts again.
func volumeDeletionMail(u *models.User, v *models.Volume, baseURL string, now time.Time) *models.OutboxMail {
	lang := u.Lang
	if lang == "" {
		lang = locales.ZH
	}
	at := v.DeleteAfter.In(pricing.Shanghai).Format("2006-01-02 15:04")
	return &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: now,
		Subject: locales.T(lang, "mail.volume_deletion.subject", fmt.Sprint(v.ID)),
		Body:    locales.T(lang, "mail.volume_deletion.body", fmt.Sprint(v.ID), at, fmt.Sprintf("%s/console", baseURL)),
	}
}
