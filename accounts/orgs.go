package accounts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/audit"
	"suanli/locales"
	"suanli/models"
	"suanli/models/platform"
)

// CreateOrg creates a team (active at once) or a provider (pending until
// a platform admin verifies it) with u as its owner, within the user's
// organisations per day (CheckOrgQuota).
func (s *Service) CreateOrg(ctx context.Context, u *models.User, kind, name string) (*models.Org, error) {
	name, e := checkName("name", name)
	var errs FieldErrors
	if e != nil {
		errs = append(errs, e)
	}
	status := models.OrgActive
	switch kind {
	case models.OrgTeam:
	case models.OrgProvider:
		status = models.OrgPending
	default:
		errs = append(errs, invalid("kind", "err.org_kind"))
	}
	if err := errs.OrNil(); err != nil {
		return nil, err
	}
	now := s.DB.Now().UTC()
	org := &models.Org{Kind: kind, Name: name, Status: status, CreatedAt: now}
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := CheckOrgQuota(tx, u.ID, "name", now); err != nil {
			return err
		}
		if err := models.InsertOrg(tx, org); err != nil {
			return err
		}
		return models.AddMember(tx, &models.Membership{OrgID: org.ID, UserID: u.ID, Role: models.RoleOwner, CreatedAt: now})
	})
	return org, err
}

// LabApplication is the lab application form.
type LabApplication struct {
	Institution, LabName, Supervisor, EmailDomain string
	// EduEmail is the applicant's own institutional address, confirmed by
	// a mailed link.
	EduEmail string
}

// eduDomain validates a lab's email domain against the institutional suffixes.
func (s *Service) eduDomain(field, domain string) (string, *apperr.Error) {
	domain = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(domain)), "@")
	if domain == "" {
		return "", invalid(field, "err.required")
	}
	if strings.ContainsAny(domain, " @/\\") || !strings.Contains(domain, ".") || len(domain) > 253 {
		return "", invalid(field, "err.domain")
	}
	suffixes := s.EduSuffixes
	if len(suffixes) == 0 {
		suffixes = DefaultEduSuffixes
	}
	if !slices.ContainsFunc(suffixes, func(sfx string) bool { return strings.HasSuffix("."+domain, sfx) }) {
		return "", invalid(field, "err.domain_not_edu", strings.Join(suffixes, " "))
	}
	return domain, nil
}

// onDomain reports whether an address is on the domain or a subdomain of it.
func onDomain(email, domain string) bool {
	_, host, ok := strings.Cut(email, "@")
	return ok && (host == domain || strings.HasSuffix(host, "."+domain))
}

// ApplyLab creates a lab (pending until a platform admin approves it) with
// u as its owner, and mails a confirmation link to u's institutional address.
func (s *Service) ApplyLab(ctx context.Context, u *models.User, in LabApplication) (*models.Org, error) {
	var errs FieldErrors
	inst, e := checkName("institution", in.Institution)
	if e != nil {
		errs = append(errs, e)
	}
	lab, e := checkName("lab_name", in.LabName)
	if e != nil {
		errs = append(errs, e)
	}
	sup, e := checkName("supervisor", in.Supervisor)
	if e != nil {
		errs = append(errs, e)
	}
	domain, e := s.eduDomain("email_domain", in.EmailDomain)
	if e != nil {
		errs = append(errs, e)
	}
	edu, e := CheckEmail("edu_email", in.EduEmail)
	if e != nil {
		errs = append(errs, e)
	} else if domain != "" && !onDomain(edu, domain) {
		errs = append(errs, invalid("edu_email", "err.edu_email_domain", domain))
	}
	if err := errs.OrNil(); err != nil {
		return nil, err
	}
	now := s.DB.Now().UTC()
	org := &models.Org{Kind: models.OrgLab, Name: lab, Institution: inst, Supervisor: sup, EmailDomain: domain, Status: models.OrgPending, CreatedAt: now}
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := CheckOrgQuota(tx, u.ID, "lab_name", now); err != nil {
			return err
		}
		if err := models.InsertOrg(tx, org); err != nil {
			return err
		}
		if err := models.AddMember(tx, &models.Membership{OrgID: org.ID, UserID: u.ID, Role: models.RoleOwner, EduEmail: edu, CreatedAt: now}); err != nil {
			return err
		}
		return s.mailLink(tx, u.Lang, edu, models.EmailToken{Purpose: models.TokenLabConfirm, UserID: &u.ID, OrgID: &org.ID, Email: edu, ExpiresAt: now.Add(VerifyTTL)},
			"lab_confirm", "/labs/confirm", org.Name)
	})
	return org, err
}

// ConfirmLabAddress uses a lab confirmation link; it must be opened by the
// member it was sent for.
func (s *Service) ConfirmLabAddress(ctx context.Context, u *models.User, token string) (*models.Org, error) {
	var org *models.Org
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		now := s.DB.Now().UTC()
		t, err := models.UseEmailToken(tx, models.TokenLabConfirm, hashToken(token), now)
		if err != nil {
			return err
		}
		if t.UserID == nil || *t.UserID != u.ID || t.OrgID == nil {
			return invalid("token", "err.link_other_user")
		}
		confirmed, err := models.ConfirmLabAddress(tx, *t.OrgID, u.ID, t.Email, now)
		if err != nil {
			return err
		}
		if !confirmed {
			return invalid("token", "err.link_invalid")
		}
		org, err = models.OrgByIDIn(tx, *t.OrgID)
		return err
	})
	return org, err
}

// Invite mails an invitation to join the organisation with a role. For a
// lab, the address must be on the lab's domain: accepting the link then
// also confirms it. It is throttled per inviter and per invited address
// (InvitesPerUser, InvitesPerEmail; *Throttled). It returns the pending
// invitation it mailed.
func (s *Service) Invite(ctx context.Context, actor *models.User, orgID int64, email, role string) (*Invitation, error) {
	org, m, err := s.Authorize(ctx, actor, orgID, InviteMembers)
	if err != nil {
		return nil, err
	}
	if org.Personal {
		// The page offers no invitation form there; the API must refuse too.
		return nil, &apperr.Error{Code: apperr.ECONFLICT, Key: "err.invite_personal", Message: locales.T(locales.EN, "err.invite_personal")}
	}
	var errs FieldErrors
	email, e := CheckEmail("email", email)
	if e != nil {
		errs = append(errs, e)
	} else if org.Kind == models.OrgLab && !onDomain(email, org.EmailDomain) {
		errs = append(errs, invalid("email", "err.edu_email_domain", org.EmailDomain))
	}
	if role != models.RoleMember && role != models.RoleAdmin {
		errs = append(errs, invalid("role", "err.role"))
	} else if models.RoleRank(role) > models.RoleRank(m.Role) {
		errs = append(errs, invalid("role", "err.role"))
	}
	if err := errs.OrNil(); err != nil {
		return nil, err
	}
	now := s.DB.Now().UTC()
	rates := []rate{{throttleInviteUser, fmt.Sprint(actor.ID), InvitesPerUser}, {throttleInviteEmail, email, InvitesPerEmail}}
	if err := s.checkRates(ctx, now, rates...); err != nil {
		return nil, err
	}
	t := models.EmailToken{Purpose: models.TokenInvite, OrgID: &org.ID, Email: email, Role: role, ExpiresAt: now.Add(InviteTTL)}
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := takeRates(tx, now, rates...); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, audit.MemberInvited, fmt.Sprintf("org:%d", org.ID), nil, email+" as "+role,
			locales.M("audit.invited", email, locales.M("role."+role))); err != nil {
			return err
		}
		return s.mailTokenLink(tx, actor.Lang, email, &t, "invite", "/invitations/accept", org.Name, actor.Name)
	})
	if err != nil {
		return nil, err
	}
	return &Invitation{ID: t.ID, Email: t.Email, Role: t.Role, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt}, nil
}

// ErrInviteOtherAddress refuses an invitation opened by someone whose
// verified address is not the invited one: a link that reaches another
// person (forwarded, leaked) is worth nothing to them.
func errInviteOtherAddress(invited string) *apperr.Error {
	return &apperr.Error{Code: apperr.EFORBIDDEN, Field: "token", Key: "err.invite_other_address", Args: []any{invited},
		Message: "this invitation was sent to " + invited + ": log in with that address, verified, to accept it"}
}

// AcceptInvite uses an invitation link for the logged-in user, whose
// verified email must be the invited address (the link alone proves
// nothing: it can be forwarded). For a lab, the invited institutional
// address is then the member's confirmed one.
func (s *Service) AcceptInvite(ctx context.Context, u *models.User, token string) (*models.Org, error) {
	var org *models.Org
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		now := s.DB.Now().UTC()
		t, err := models.UseEmailToken(tx, models.TokenInvite, hashToken(token), now)
		if err != nil {
			return err
		}
		org, err = s.join(ctx, tx, u, t, now)
		return err
	})
	return org, err
}

// AcceptInvitation accepts, by its number, an invitation to the user's
// verified address: the way in on a device the invitation mail was not
// opened on (the account page lists them, InvitationsForMe).
func (s *Service) AcceptInvitation(ctx context.Context, u *models.User, id int64) (*models.Org, error) {
	var org *models.Org
	if !u.Verified() {
		return nil, apperr.NotFound("invitation")
	}
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		now := s.DB.Now().UTC()
		// Looked up with the user's address: nobody else can take an
		// invitation, or learn that it exists.
		t, err := models.UseInvitation(tx, id, u.Email, now)
		if err != nil {
			return err
		}
		org, err = s.join(ctx, tx, u, t, now)
		return err
	})
	return org, err
}

// join makes the user a member by an invitation taken in tx, if their
// verified email is the invited address (rolling back otherwise leaves the
// invitation usable by the invited person).
func (s *Service) join(ctx context.Context, tx *gorm.DB, u *models.User, t *models.EmailToken, now time.Time) (*models.Org, error) {
	if !u.Verified() || models.NormalizeEmail(u.Email) != models.NormalizeEmail(t.Email) {
		return nil, errInviteOtherAddress(t.Email)
	}
	org, err := models.OrgByIDIn(tx, *t.OrgID)
	if err != nil {
		return nil, err
	}
	m := &models.Membership{OrgID: org.ID, UserID: u.ID, Role: t.Role, CreatedAt: now}
	if org.Kind == models.OrgLab {
		// The invitation went to the institutional address the user verified.
		m.EduEmail, m.ConfirmedAt = t.Email, &now
	}
	if err := models.AddMember(tx, m); err != nil {
		return nil, err
	}
	if err := models.RetireInvitations(tx, org.ID, t.Email, now); err != nil {
		return nil, err
	}
	// Joining grants a role: a permission change.
	return org, audit.Record(ctx, tx, audit.RoleChanged, fmt.Sprintf("org:%d", org.ID), nil, fmt.Sprintf("user %d joined as %s (invitation to %s)", u.ID, t.Role, t.Email),
		locales.M("audit.joined", u.ID, locales.M("role."+t.Role), t.Email))
}

// InvitationsForMe lists the pending invitations to the user's verified
// address, newest first (none before it is verified).
func (s *Service) InvitationsForMe(ctx context.Context, u *models.User) ([]models.InvitationTo, error) {
	if !u.Verified() {
		return nil, nil
	}
	return s.DB.InvitationsTo(ctx, u.Email, s.DB.Now().UTC())
}

// Invitation is a pending invitation as the organisation page lists it.
type Invitation struct {
	ID        int64
	Email     string
	Role      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// PendingInvitations lists an organisation's invitations that can still be
// accepted, for a member who may invite.
func (s *Service) PendingInvitations(ctx context.Context, actor *models.User, orgID int64) ([]Invitation, error) {
	if _, _, err := s.Authorize(ctx, actor, orgID, InviteMembers); err != nil {
		return nil, err
	}
	ts, err := s.DB.PendingInvitations(ctx, orgID, s.DB.Now().UTC())
	if err != nil {
		return nil, err
	}
	out := make([]Invitation, len(ts))
	for i, t := range ts {
		out[i] = Invitation{ID: t.ID, Email: t.Email, Role: t.Role, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt}
	}
	return out, nil
}

// RevokeInvitation makes a pending invitation's link worthless.
func (s *Service) RevokeInvitation(ctx context.Context, actor *models.User, orgID, invitationID int64) error {
	if _, _, err := s.Authorize(ctx, actor, orgID, InviteMembers); err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		ok, err := models.RevokeInvitation(tx, orgID, invitationID, s.DB.Now().UTC())
		if err != nil {
			return err
		}
		if !ok {
			return apperr.NotFound("invitation")
		}
		return audit.Record(ctx, tx, audit.InviteRevoked, fmt.Sprintf("org:%d", orgID), nil, fmt.Sprintf("invitation %d", invitationID),
			locales.M("audit.invitation", invitationID))
	})
}

// RemoveMember removes a member (the owner cannot be removed).
func (s *Service) RemoveMember(ctx context.Context, actor *models.User, orgID, userID int64) error {
	if _, _, err := s.Authorize(ctx, actor, orgID, RemoveMembers); err != nil {
		return err
	}
	target, err := s.DB.MembershipOf(ctx, orgID, userID)
	if err != nil {
		return err
	}
	if target.Role == models.RoleOwner {
		return apperr.Errorf(apperr.ECONFLICT, "the owner cannot be removed")
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := models.RemoveMember(tx, orgID, userID); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.MemberRemoved, fmt.Sprintf("org:%d", orgID), nil, fmt.Sprintf("user %d (%s)", userID, target.Role),
			locales.M("audit.member_removed", userID, locales.M("role."+target.Role)))
	})
}

// SetLabBudget stores a lab's monthly budget and cap per member (nil: none).
func (s *Service) SetLabBudget(ctx context.Context, actor *models.User, orgID int64, budget, cap *int64) error {
	if _, _, err := s.Authorize(ctx, actor, orgID, SetBudget); err != nil {
		return err
	}
	// The form cannot send a negative amount; the API can.
	var errs FieldErrors
	if budget != nil && *budget < 0 {
		errs = append(errs, invalid("monthly_budget", "err.amount_negative"))
	}
	if cap != nil && *cap < 0 {
		errs = append(errs, invalid("member_cap", "err.amount_negative"))
	}
	if err := errs.OrNil(); err != nil {
		return err
	}
	if budget != nil && cap != nil && *cap > *budget {
		return FieldErrors{invalid("member_cap", "err.cap_over_budget")}
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error { return models.SetLabBudget(tx, orgID, budget, cap) })
}

// Review approves or rejects a pending lab or provider.
func (s *Service) Review(ctx context.Context, admin *models.User, orgID int64, approve bool, reason string) error {
	if err := RequirePlatformAdmin(admin); err != nil {
		return err
	}
	org, err := s.DB.OrgByID(ctx, orgID)
	if err != nil {
		return err
	}
	if org.Kind == models.OrgTeam {
		return apperr.NotFound("application")
	}
	// The reason is shown to the applicant: text of a bounded length (a
	// NUL byte would otherwise reach PostgreSQL as a 500).
	reason, err = checkReason(reason, false)
	if err != nil {
		return err
	}
	status := models.OrgApproved
	if !approve {
		status = models.OrgRejected
		if reason == "" {
			return FieldErrors{invalid("reason", "err.reason_required")}
		}
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := models.SetOrgStatus(tx, orgID, status, reason, admin.ID, s.DB.Now().UTC()); err != nil {
			return err
		}
		action := audit.OrgApproved
		if !approve {
			action = audit.OrgRejected
		}
		msg := locales.M("audit.reviewed", locales.M("org.kind."+org.Kind), org.Name)
		if r := strings.TrimSpace(reason); r != "" {
			msg = locales.M("audit.reviewed_because", locales.M("org.kind."+org.Kind), org.Name, r)
		}
		return audit.Record(ctx, tx, action, fmt.Sprintf("org:%d", orgID), nil, strings.TrimSpace(org.Kind+" "+org.Name+": "+strings.TrimSpace(reason)), msg)
	})
}

// Billing is an organisation's billing settings.
type Billing struct {
	InvoiceTitle, TaxID string
	// HourlyCapFen caps spending per rolling hour (nil: none).
	HourlyCapFen *int64
}

// SetBilling stores the invoice details printed on receipts and the cap
// on spending per hour.
func (s *Service) SetBilling(ctx context.Context, actor *models.User, orgID int64, b Billing) error {
	if _, _, err := s.Authorize(ctx, actor, orgID, ManageBilling); err != nil {
		return err
	}
	var errs FieldErrors
	title, taxID := strings.TrimSpace(b.InvoiceTitle), strings.ToUpper(strings.TrimSpace(b.TaxID))
	if title != "" {
		if t, e := checkName("invoice_title", title); e != nil {
			errs = append(errs, e)
		} else {
			title = t
		}
	}
	// A unified social credit code is 18 characters; foreign tax ids vary.
	if taxID != "" && (len(taxID) > 32 || strings.IndexFunc(taxID, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r == '-')
	}) >= 0) {
		errs = append(errs, invalid("tax_id", "err.tax_id"))
	}
	if b.HourlyCapFen != nil && *b.HourlyCapFen <= 0 {
		errs = append(errs, invalid("hourly_cap", "err.amount"))
	}
	if err := errs.OrNil(); err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		return models.SetOrgBilling(tx, orgID, title, taxID, b.HourlyCapFen)
	})
}

// SetOrgsPerDay sets how many organisations a user may create per day
// (nil: DefaultOrgsPerDay again), for an operator at the console
// (admin nil) or a platform admin. It is audited.
func (s *Service) SetOrgsPerDay(ctx context.Context, admin *models.User, userID int64, n *int) error {
	if admin != nil {
		if err := RequirePlatformAdmin(admin); err != nil {
			return err
		}
	}
	if n != nil && (*n < 0 || *n > MaxOrgsPerDay) {
		return FieldErrors{invalid("orgs_per_day", "err.orgs_per_day", MaxOrgsPerDay)}
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if _, err := platform.UserForUpdate(tx, userID); err != nil {
			return err
		}
		if err := models.SetOrgsPerDay(tx, userID, n); err != nil {
			return err
		}
		detail := fmt.Sprintf("organisations per day: default (%d)", DefaultOrgsPerDay)
		msg := locales.M("audit.orgs_per_day_default", DefaultOrgsPerDay)
		if n != nil {
			detail = fmt.Sprintf("organisations per day: %d", *n)
			msg = locales.M("audit.orgs_per_day", *n)
		}
		return audit.Record(ctx, tx, audit.OrgsPerDay, fmt.Sprintf("user:%d", userID), nil, detail, msg)
	})
}
