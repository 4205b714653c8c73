package accounts

import (
	"context"
	"strings"

	"suanli/apperr"
	"suanli/models"
)

// TokenPrefix starts every API token, so leaked ones are easy to find.
const TokenPrefix = "sl_"

// CreateAPIToken makes a named token for u and returns it in plain text;
// this is the only time it is shown.
func (s *Service) CreateAPIToken(ctx context.Context, u *models.User, name string) (string, *models.APIToken, error) {
	name, e := checkName("name", name)
	if e != nil {
		return "", nil, FieldErrors{e}
	}
	secret, _ := newToken()
	plain := TokenPrefix + secret
	t := &models.APIToken{UserID: u.ID, Name: name, Prefix: plain[:len(TokenPrefix)+6], TokenHash: hashToken(plain), CreatedAt: s.DB.Now().UTC()}
	if err := s.DB.InsertAPIToken(ctx, t); err != nil {
		return "", nil, err
	}
	return plain, t, nil
}

// UserByAPIToken authenticates a bearer token; a revoked or unknown token
// is EUNAUTHORIZED.
func (s *Service) UserByAPIToken(ctx context.Context, plain string) (*models.User, error) {
	if !strings.HasPrefix(plain, TokenPrefix) || len(plain) > 100 {
		return nil, apperr.Errorf(apperr.EUNAUTHORIZED, "invalid API token")
	}
	u, err := s.DB.UserByAPIToken(ctx, hashToken(plain), s.DB.Now().UTC())
	if apperr.Code(err) == apperr.ENOTFOUND {
		return nil, apperr.Errorf(apperr.EUNAUTHORIZED, "invalid or revoked API token")
	}
	return u, err
}
