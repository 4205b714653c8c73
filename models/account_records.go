package models

import (
	"cmp"
	"time"

	"suanli/locales"
)

// User is a person with a login.
type User struct {
	ID              int64
	Email           string // lower-cased
	Name            string
	Lang            string
	PasswordHash    string
	EmailVerifiedAt *time.Time
	PlatformAdmin   bool
	CreatedAt       time.Time
	// SuspendedAt is set while a platform admin has suspended the user.
	SuspendedAt *time.Time
	// SessionEpoch is stored in each login session; raising it ends every
	// session logged in before.
	SessionEpoch int64
	// OrgsPerDay, when set by a platform admin, replaces the default
	// number of organisations the user may create per day.
	OrgsPerDay *int
}

// Verified reports whether the user confirmed their email address.
func (u *User) Verified() bool { return u != nil && u.EmailVerifiedAt != nil }

// MailLang is the language the user's mail is written in: theirs, or the
// default Chinese for an account that never chose.
func (u *User) MailLang() string { return cmp.Or(u.Lang, locales.ZH) }

// Organisation kinds.
const (
	OrgTeam     = "team"
	OrgLab      = "lab"
	OrgProvider = "provider"
)

// Organisation statuses: teams are active at once; labs and providers wait
// for a platform admin.
const (
	OrgActive   = "active"
	OrgPending  = "pending"
	OrgApproved = "approved"
	OrgRejected = "rejected"
)

// Org is an organisation: a startup team, a university lab or a provider.
// Rentals and wallets belong to organisations.
type Org struct {
	ID               int64
	Kind             string
	Name             string
	Personal         bool
	Status           string
	StatusReason     string
	Institution      string
	Supervisor       string
	EmailDomain      string
	MonthlyBudgetFen *int64
	MemberCapFen     *int64
	// HourlyCapFen caps spending per rolling hour (nil: none).
	HourlyCapFen *int64
	// InvoiceTitle and TaxID are printed on receipts.
	InvoiceTitle string
	TaxID        string `gorm:"column:tax_id"`
	ReviewedBy   *int64
	ReviewedAt   *time.Time
	CreatedAt    time.Time
	// SuspendedAt is set while a platform admin has suspended the organisation.
	SuspendedAt *time.Time
	// IdlePolicy is a lab's idle-stop policy for its members' rentals
	// (zero: none): they stop at the latest when every GPU stays below
	// its BelowPct % for its Minutes.
	IdlePolicy IdleStop `gorm:"embedded;embeddedPrefix:idle_policy_"`
}

// Usable reports whether the organisation may act: an active team or an
// approved lab or provider.
func (o *Org) Usable() bool { return o.Status == OrgActive || o.Status == OrgApproved }

// Roles in an organisation, strongest first.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// RoleRank orders roles: owner 3, admin 2, member 1, anything else 0.
func RoleRank(role string) int {
	switch role {
	case RoleOwner:
		return 3
	case RoleAdmin:
		return 2
	case RoleMember:
		return 1
	}
	return 0
}

// Membership is a user's role in an organisation.
type Membership struct {
	OrgID  int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID int64 `gorm:"primaryKey;autoIncrement:false"`
	Role   string
	// EduEmail is a lab member's institutional address; ConfirmedAt is
	// when a mailed link proved it.
	EduEmail    string
	ConfirmedAt *time.Time
	CreatedAt   time.Time
}

// Email token purposes.
const (
	TokenVerify     = "verify"
	TokenReset      = "reset"
	TokenLabConfirm = "lab_confirm"
	TokenInvite     = "invite"
)

// EmailToken is a one-time link sent by mail; only its hash is stored.
type EmailToken struct {
	ID        int64
	Purpose   string
	TokenHash string
	UserID    *int64
	OrgID     *int64
	Email     string
	Role      string
	ExpiresAt time.Time
	UsedAt    *time.Time
	CreatedAt time.Time
}

// APIToken is a named bearer token of a user; only its hash is stored.
type APIToken struct {
	ID         int64
	UserID     int64
	Name       string
	Prefix     string
	TokenHash  string
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	CreatedAt  time.Time
}

// LoginFailure records a wrong password, for throttling.
type LoginFailure struct {
	ID    int64
	Email string
	IP    string `gorm:"column:ip"`
	At    time.Time
}

// OutboxMail is a message to send (or, without SMTP, to read in the admin area).
type OutboxMail struct {
	ID        int64
	ToAddr    string
	Subject   string
	Body      string
	Lang      string
	CreatedAt time.Time
	SentAt    *time.Time
	LastError string
}

// TableName implements gorm's tabler.
func (OutboxMail) TableName() string { return "outbox" }
