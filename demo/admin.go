package demo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"

	"suanli/accounts"
	"suanli/apperr"
)

// AdminEmail is the demo's platform admin, who verifies labs and reads the
// outbox (where the demo's mail goes).
const AdminEmail = "admin@demo.suanli.test"

// Login is a demo account as the demo's start shows it: Password is the
// one just made, or empty when the account already existed (its password
// was shown when it was made, and is not kept in clear).
type Login struct {
	Email, Password string
}

// SeedAdmin creates the demo's platform admin with a fresh random password,
// logs it and returns it; if the admin exists it says so and changes
// nothing.
func SeedAdmin(ctx context.Context, s *accounts.Service) (Login, error) {
	l := Login{Email: AdminEmail}
	_, err := s.DB.UserByEmail(ctx, AdminEmail)
	if err == nil {
		slog.Info("demo admin exists (reset its password with /password/forgot; the mail is in the outbox table)", "email", AdminEmail)
		return l, nil
	}
	if apperr.Code(err) != apperr.ENOTFOUND {
		return l, err
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return l, err
	}
	password := base64.RawURLEncoding.EncodeToString(b)
	// A person's name, shown as it is in both languages.
	if _, err := s.CreateUser(ctx, AdminEmail, password, "周敏", true); err != nil {
		return l, err
	}
	slog.Info("demo admin created: log in at /login to verify labs and read the outbox at /admin", "email", AdminEmail, "password", password)
	l.Password = password
	return l, nil
}
