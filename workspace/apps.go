package workspace

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/platform"
)

// Renters' apps (Jupyter, declared ports) run what the renter's container
// sends: HTML and scripts the marketplace cannot vouch for. On the
// marketplace's own origin those scripts could act with a viewer's
// session; with an apps domain configured they are served instead on an
// origin of their own per rental (r{id}.APPS-DOMAIN), which the
// marketplace's cookies never reach. The browser gets there with a
// one-time ticket made by the marketplace for the user and the rental,
// which the apps origin trades for a session of its own.

// Lifetimes of a ticket (the redirect's time) and of an app session.
const (
	TicketTTL     = time.Minute
	AppSessionTTL = 12 * time.Hour
)

// ticketPrefix and appPrefix start the tokens (what they are, in a log).
const (
	ticketPrefix = "sat_"
	appPrefix    = "sas_"
)

func newToken(prefix string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// Ticket is a one-time ticket to rentalID's apps origin for u, who may
// work in the rental (For's answers otherwise), from the marketplace
// session of sessionToken: the app sessions it opens end when that
// session logs out (EndAppSessions).
func (s *Service) Ticket(ctx context.Context, u *models.User, rentalID int64, sessionToken string) (string, error) {
	if _, err := s.For(ctx, u, rentalID); err != nil {
		return "", err
	}
	token, err := newToken(ticketPrefix)
	if err != nil {
		return "", err
	}
	g := &platform.AppGrant{TokenHash: tokenHash(token), Kind: platform.AppTicket, UserID: u.ID, RentalID: rentalID,
		SessionEpoch: u.SessionEpoch, SessionHash: sessionHash(sessionToken), ExpiresAt: s.DB.Now().Add(TicketTTL)}
	if err := platform.InsertAppGrant(ctx, s.DB, g); err != nil {
		return "", err
	}
	return token, nil
}

// sessionHash is what an app grant keeps of the marketplace session that
// made it ("" for none).
func sessionHash(token string) string {
	if token == "" {
		return ""
	}
	return tokenHash(token)
}

var errTicket = &apperr.Error{Code: apperr.ENOTFOUND, Message: "this link to the app has expired or was used: open the app from the rental's page again", Key: "err.workspace_ticket"}

// Redeem trades a ticket for an app session of rentalID's apps origin,
// once, within TicketTTL; it returns the session's token and expiry.
func (s *Service) Redeem(ctx context.Context, ticket string, rentalID int64) (string, time.Time, error) {
	if !strings.HasPrefix(ticket, ticketPrefix) || len(ticket) > 100 {
		return "", time.Time{}, errTicket
	}
	token, err := newToken(appPrefix)
	if err != nil {
		return "", time.Time{}, err
	}
	now := s.DB.Now()
	exp := now.Add(AppSessionTTL)
	err = platform.TradeAppTicket(ctx, s.DB, tokenHash(ticket), rentalID, now, &platform.AppGrant{TokenHash: tokenHash(token), ExpiresAt: exp})
	if apperr.Code(err) == apperr.ENOTFOUND {
		return "", time.Time{}, errTicket
	}
	if err != nil {
		return "", time.Time{}, err
	}
	return token, exp, nil
}

// EndAppSessions ends the apps origins' sessions (and tickets) that the
// marketplace session of sessionToken opened: its user logs out there.
func (s *Service) EndAppSessions(ctx context.Context, sessionToken string) error {
	return platform.EndAppGrantsOfSession(ctx, s.DB, sessionHash(sessionToken))
}

// ErrNoAppSession answers an app session token that is unknown, expired,
// of another rental, or taken before its user's sessions were ended (or
// its user is suspended).
var ErrNoAppSession = apperr.Errorf(apperr.EUNAUTHORIZED, "the app session is unknown, expired or ended: open the app from the rental's page")

// AppUser is the user of an app session of rentalID's apps origin, or
// ErrNoAppSession. Whether the user may still work in the rental is For's
// to say.
func (s *Service) AppUser(ctx context.Context, token string, rentalID int64) (*models.User, error) {
	if !strings.HasPrefix(token, appPrefix) || len(token) > 100 {
		return nil, ErrNoAppSession
	}
	g, err := platform.AppSessionOf(ctx, s.DB, tokenHash(token), rentalID, s.DB.Now())
	if apperr.Code(err) == apperr.ENOTFOUND {
		return nil, ErrNoAppSession
	}
	if err != nil {
		return nil, err
	}
	u, err := s.DB.UserByID(ctx, g.UserID)
	if apperr.Code(err) == apperr.ENOTFOUND {
		return nil, ErrNoAppSession
	}
	if err != nil {
		return nil, err
	}
	if u.SessionEpoch != g.SessionEpoch || u.SuspendedAt != nil {
		return nil, ErrNoAppSession
	}
	return u, nil
}

// SessionLive reports whether the marketplace's session of token still
// exists (a lasting connection ends with its session).
func (s *Service) SessionLive(ctx context.Context, token string) (bool, error) {
	return platform.SessionLive(ctx, s.DB, token)
}
