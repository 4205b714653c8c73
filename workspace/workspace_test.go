package workspace_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/workspace"
)

// people are a team organisation's owner (who rents), an admin and a
// member, and a user of no organisation of theirs.
type people struct {
	owner, admin, member, stranger *models.User
	org                            *models.Org
}

func team(t *testing.T, db *models.DB) people {
	t.Helper()
	ctx := context.Background()
	svc := &accounts.Service{DB: db}
	var p people
	for i, u := range []**models.User{&p.owner, &p.admin, &p.member, &p.stranger} {
		made, err := svc.CreateUser(ctx, []string{"owner", "admin", "member", "stranger"}[i]+"@example.com", "pass-word-2026!", "x", false)
		if err != nil {
			t.Fatal(err)
		}
		*u = made
	}
	org, err := svc.CreateOrg(ctx, p.owner, models.OrgTeam, "Team")
	if err != nil {
		t.Fatal(err)
	}
	p.org = org
	if err := db.Tx(ctx, func(tx *gorm.DB) error {
		if err := models.AddMember(tx, &models.Membership{OrgID: org.ID, UserID: p.admin.ID, Role: models.RoleAdmin, CreatedAt: db.Now()}); err != nil {
			return err
		}
		return models.AddMember(tx, &models.Membership{OrgID: org.ID, UserID: p.member.ID, Role: models.RoleMember, CreatedAt: db.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	return p
}

// rental stores a rental of the organisation's owner on a demo offer's
// node in status, with access details access ("" none) and ports.
func rental(t *testing.T, db *models.DB, p people, status models.RentalStatus, access, ports string) *models.Rental {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	var o models.Offer
	if err := db.R.Order("id").First(&o).Error; err != nil {
		t.Fatal(err)
	}
	node := o.NodeID
	now := db.Now().UTC()
	r := &models.Rental{OrgID: p.org.ID, UserID: p.owner.ID, OfferID: o.ID, ProviderID: o.ProviderID, NodeID: &node, GPUs: 1, SLA: "standard",
		Term: "on_demand", Status: status, SSHPublicKey: "ssh-ed25519 AAAA", WorkspaceID: "w" + strings.ToLower(string(status)),
		PricePerGPUHourFen: 100, Access: access, Ports: ports, CreatedAt: now, UpdatedAt: now}
	if err := db.Tx(ctx, func(tx *gorm.DB) error { return rentalstore.InsertRental(tx, r) }); err != nil {
		t.Fatal(err)
	}
	return r
}

const containerAccess = `{"host":"203.0.113.7","port":22001,"user":"root","command":"ssh -p 22001 root@203.0.113.7","simulated":false,"container":true,"jupyter":{"port":8888,"kind":"lab"}}`

// Who may work in a rental's container: its renter and the
// organisation's admins; a member who may only look at it is refused
// (403), a user of another organisation gets 404 as for no rental; and
// only a running rental with a real container opens.
func TestWhoMayWorkInAContainer(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		p := team(t, db)
		ws := &workspace.Service{DB: db}
		r := rental(t, db, p, models.RentalRunning, containerAccess, "6006,7860")
		for _, u := range []*models.User{p.owner, p.admin} {
			w, err := ws.For(ctx, u, r.ID)
			if err != nil {
				t.Fatalf("%s: %v", u.Email, err)
			}
			if w.NodeID != *r.NodeID || !w.Jupyter || !w.HasPort(6006) || !w.HasPort(7860) || w.HasPort(22) {
				t.Errorf("%s's workspace: %+v", u.Email, w)
			}
		}
		if _, err := ws.For(ctx, p.member, r.ID); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a member: %v, want forbidden", err)
		}
		for _, u := range []*models.User{p.stranger, nil} {
			if _, err := ws.For(ctx, u, r.ID); apperr.Code(err) != apperr.ENOTFOUND {
				t.Errorf("no member (%v): %v, want not found", u, err)
			}
		}
		if _, err := ws.For(ctx, p.owner, r.ID+1000); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("no such rental: %v", err)
		}
		stopped := rental(t, db, p, models.RentalStopped, containerAccess, "")
		if _, err := ws.For(ctx, p.owner, stopped.ID); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("a stopped rental: %v, want conflict", err)
		}
		sim := rental(t, db, p, models.RentalProvisioning, `{"host":"h","port":1,"user":"root","command":"ssh","simulated":true}`, "")
		if _, err := ws.For(ctx, p.owner, sim.ID); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("a provisioning rental: %v, want conflict", err)
		}
	})
}

// A share link opens one declared port to anyone holding its token
// until it expires or is revoked; only who may work in the rental makes
// or revokes one; bad ports and lifetimes are refused on their fields.
func TestShareLinks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
		db.Now = func() time.Time { return now }
		p := team(t, db)
		ws := &workspace.Service{DB: db}
		r := rental(t, db, p, models.RentalRunning, containerAccess, "6006")

		token, sh, err := ws.CreateShare(ctx, p.admin, r.ID, 6006, 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(token, "shr_") || len(token) < 40 || sh.TokenHash == token || strings.Contains(sh.TokenHash, token) {
			t.Errorf("token %q, stored %q", token, sh.TokenHash)
		}
		w, port, err := ws.SharedWorkspace(ctx, token)
		if err != nil || port != 6006 || w.RentalID != r.ID {
			t.Fatalf("open the link: %+v %d %v", w, port, err)
		}
		for _, bad := range []string{"", "shr_", token + "x", strings.TrimPrefix(token, "shr_")} {
			if _, _, err := ws.SharedWorkspace(ctx, bad); apperr.Code(err) != apperr.ENOTFOUND {
				t.Errorf("token %q: %v, want not found", bad, err)
			}
		}

		for _, c := range []struct {
			port  int
			ttl   time.Duration
			field string
		}{{7860, time.Hour, "port"}, {6006, 30 * time.Minute, "hours"}, {6006, 8 * 24 * time.Hour, "hours"}} {
			_, _, err := ws.CreateShare(ctx, p.owner, r.ID, c.port, c.ttl)
			if ae, ok := apperr.As(err); !ok || ae.Field != c.field {
				t.Errorf("port %d for %s: %v, want a problem with %s", c.port, c.ttl, err, c.field)
			}
		}
		if _, _, err := ws.CreateShare(ctx, p.member, r.ID, 6006, time.Hour); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a member shares: %v, want forbidden", err)
		}
		if _, _, err := ws.CreateShare(ctx, p.stranger, r.ID, 6006, time.Hour); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a stranger shares: %v, want not found", err)
		}
		live, err := ws.Shares(ctx, r.ID)
		if err != nil || len(live) != 1 {
			t.Fatalf("live links: %v %v", live, err)
		}

		// Expired: gone from the list and opens nothing.
		now = now.Add(2*time.Hour + time.Second)
		if _, _, err := ws.SharedWorkspace(ctx, token); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("an expired link: %v", err)
		}
		if live, _ := ws.Shares(ctx, r.ID); len(live) != 0 {
			t.Errorf("an expired link is listed: %v", live)
		}

		// Revoked: by the renter, not by a member or a stranger.
		token2, sh2, err := ws.CreateShare(ctx, p.owner, r.ID, 6006, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.RevokeShare(ctx, p.member, r.ID, sh2.ID); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a member revokes: %v", err)
		}
		if err := ws.RevokeShare(ctx, p.stranger, r.ID, sh2.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a stranger revokes: %v", err)
		}
		other := rental(t, db, p, models.RentalStopping, containerAccess, "6006")
		if err := ws.RevokeShare(ctx, p.owner, other.ID, sh2.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("revoking through another rental: %v", err)
		}
		if err := ws.RevokeShare(ctx, p.owner, r.ID, sh2.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ws.SharedWorkspace(ctx, token2); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a revoked link: %v", err)
		}
		if err := ws.RevokeShare(ctx, p.owner, r.ID, sh2.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("revoking twice: %v", err)
		}

		// A link is its maker's: an admin's opens nothing once the admin
		// is a plain member, and again once the admin is back.
		tokenA, _, err := ws.CreateShare(ctx, p.admin, r.ID, 6006, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		setRole := func(role string) {
			t.Helper()
			if err := db.W.Model(&models.Membership{}).Where("org_id = ? AND user_id = ?", p.org.ID, p.admin.ID).Update("role", role).Error; err != nil {
				t.Fatal(err)
			}
		}
		setRole(models.RoleMember)
		if _, _, err := ws.SharedWorkspace(ctx, tokenA); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("the link of a maker who may no longer work in the rental: %v, want not found", err)
		}
		setRole(models.RoleAdmin)
		if _, _, err := ws.SharedWorkspace(ctx, tokenA); err != nil {
			t.Errorf("the link of a maker who may again: %v", err)
		}

		// A link to a rental that stops opens nothing meanwhile.
		token3, _, err := ws.CreateShare(ctx, p.owner, r.ID, 6006, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.W.Model(&models.Rental{}).Where("id = ?", r.ID).Update("status", models.RentalStopped).Error; err != nil {
			t.Fatal(err)
		}
		if _, _, err := ws.SharedWorkspace(ctx, token3); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("the link of a stopped rental: %v, want conflict", err)
		}
	})
}

// Declared ports: numbers 1 to 65535 but 22, at most eight, sorted and
// without repeats; a form's text list too.
func TestCheckPorts(t *testing.T) {
	if got, err := workspace.ParsePortList(" 7860, 6006 6006，8888 "); err != nil || len(got) != 3 || got[0] != 6006 || got[2] != 8888 {
		t.Errorf("a list: %v %v", got, err)
	}
	if got, err := workspace.ParsePortList(""); err != nil || len(got) != 0 {
		t.Errorf("none: %v %v", got, err)
	}
	for _, bad := range []string{"22", "0", "65536", "80,abc", "-1", "1,2,3,4,5,6,7,8,9"} {
		if _, err := workspace.ParsePortList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		} else if ae, ok := apperr.As(err); !ok || ae.Field != "ports" {
			t.Errorf("%q: %v, want a problem with ports", bad, err)
		}
	}
}

// An apps origin's session: a ticket for who may work in the running
// rental, traded once, on its rental's origin only, for a session that
// names its user; ended by "log out other sessions" (the epoch), by a
// suspension, and by logging out of the marketplace session that made
// its ticket (EndAppSessions), which leaves another session's alone.
func TestAppSessions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		p := team(t, db)
		r := rental(t, db, p, models.RentalRunning, containerAccess, "")
		ws := &workspace.Service{DB: db}
		if _, err := ws.Ticket(ctx, p.member, r.ID, "member-session"); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a member's ticket: %v, want forbidden", err)
		}
		if _, err := ws.Ticket(ctx, p.stranger, r.ID, "stranger-session"); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a stranger's ticket: %v, want not found", err)
		}
		open := func(sessionToken string) string {
			t.Helper()
			ticket, err := ws.Ticket(ctx, p.owner, r.ID, sessionToken)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := ws.Redeem(ctx, ticket, r.ID+1); apperr.Code(err) != apperr.ENOTFOUND {
				t.Errorf("the ticket on another rental's origin: %v, want not found", err)
			}
			token, exp, err := ws.Redeem(ctx, ticket, r.ID)
			if err != nil || !exp.After(db.Now()) {
				t.Fatalf("redeem: %v, expires %v", err, exp)
			}
			if _, _, err := ws.Redeem(ctx, ticket, r.ID); apperr.Code(err) != apperr.ENOTFOUND {
				t.Errorf("the ticket twice: %v, want not found", err)
			}
			return token
		}
		user := func(token string) *models.User {
			t.Helper()
			u, err := ws.AppUser(ctx, token, r.ID)
			if errors.Is(err, workspace.ErrNoAppSession) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		laptop, phone := open("laptop-session"), open("phone-session")
		if u := user(laptop); u == nil || u.ID != p.owner.ID {
			t.Fatalf("the app session's user: %+v", u)
		}
		if u, _ := ws.AppUser(ctx, laptop, r.ID+1); u != nil {
			t.Error("an app session opened another rental's origin")
		}
		if err := ws.EndAppSessions(ctx, "laptop-session"); err != nil {
			t.Fatal(err)
		}
		if user(laptop) != nil || user(phone) == nil {
			t.Errorf("after logging out on the laptop: laptop's app session %v, phone's %v; want ended and kept", user(laptop), user(phone))
		}
		if err := (&accounts.Service{DB: db}).EndOtherSessions(ctx, p.owner); err != nil {
			t.Fatal(err)
		}
		if user(phone) != nil {
			t.Error("an app session outlived the user's ended sessions")
		}
	})
}
