// Package workspace is a running rental's container as the renter's
// browser reaches it: who may work in it, what it exposes (Jupyter, the
// HTTP ports declared at rent), and the share links that open a port to
// people outside the organisation.
package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"suanli/agent"
	"suanli/apperr"
	"suanli/models"
	"suanli/models/rentalstore"
)

// MaxPorts is how many HTTP ports a rental may declare for the browser.
const MaxPorts = 8

// CheckPorts validates the container ports a renter declares for the
// browser: 1 to 65535, not 22 (sshd has it; SSH is reached directly), at
// most MaxPorts. It returns them sorted without repeats.
func CheckPorts(ports []int) ([]int, error) {
	out := slices.Clone(ports)
	slices.Sort(out)
	out = slices.Compact(out)
	for _, p := range out {
		if p < 1 || p > 65535 || p == 22 {
			return nil, apperr.Field("ports", "err.port_invalid", p)
		}
	}
	if len(out) > MaxPorts {
		return nil, apperr.Field("ports", "err.ports_too_many", MaxPorts)
	}
	return out, nil
}

// ParsePortList reads ports as a form sends them: numbers separated by
// commas or spaces ("6006, 7860"). A part that is not a number is an
// error naming the field.
func ParsePortList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '，' || r == '\t' }) {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, apperr.Field("ports", "err.ports_syntax")
		}
		out = append(out, n)
	}
	return CheckPorts(out)
}

// CheckSSHKey accepts one OpenSSH public key line: the key the renter
// logs in to the container with (SSH, scp, rsync), trimmed.
func CheckSSHKey(k string) (string, error) {
	k = strings.TrimSpace(k)
	if k == "" {
		return "", apperr.Field("ssh_public_key", "err.ssh_key_missing")
	}
	if len(k) > 16384 || strings.ContainsAny(k, "\r\n") {
		return "", apperr.Field("ssh_public_key", "err.ssh_key")
	}
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
		return "", apperr.Field("ssh_public_key", "err.ssh_key")
	}
	return k, nil
}

// Workspace is what the browser proxy needs of a running rental: where
// its container is and what of it may be opened.
type Workspace struct {
	RentalID int64
	NodeID   int64
	// Jupyter is set when the launcher started Jupyter in the container.
	Jupyter bool
	// Ports are the declared HTTP ports.
	Ports []int
}

// HasPort reports whether port was declared.
func (w *Workspace) HasPort(port int) bool { return slices.Contains(w.Ports, port) }

// CanWork reports whether u may work in the rental's container (open
// Jupyter, a terminal, its ports and files, share a port): whoever may
// stop it, the renter or an admin of its organisation. Working in a
// container is running code as root in it, which a member who may only
// look at the organisation's rentals (or a platform admin) may not do.
func CanWork(r *models.Rental, u *models.User, m *models.Membership) bool { return r.ManagedBy(u, m) }

// errNotRunning is the answer for a rental whose container is not up.
var errNotRunning = &apperr.Error{Code: apperr.ECONFLICT, Message: "the rental is not running: start it to open its workspace", Key: "err.workspace_not_running"}

// Service answers who may work in which rental's container.
type Service struct {
	DB *models.DB
}

// For is rentalID's workspace if u may work in it: a user of
// another organisation (or none) gets ENOTFOUND, as for a rental that
// does not exist; a member who may not gets EFORBIDDEN; a rental that is
// not running, or whose node runs no container (a simulated or script
// launcher), ECONFLICT.
func (s *Service) For(ctx context.Context, u *models.User, rentalID int64) (*Workspace, error) {
	if u == nil {
		return nil, apperr.NotFound("rental")
	}
	r, err := s.DB.RentalByID(ctx, rentalID)
	if err != nil {
		return nil, err
	}
	m, err := s.DB.MembershipOf(ctx, r.OrgID, u.ID)
	if apperr.Code(err) == apperr.ENOTFOUND {
		return nil, apperr.NotFound("rental")
	}
	if err != nil {
		return nil, err
	}
	if !CanWork(&r, u, m) {
		return nil, &apperr.Error{Code: apperr.EFORBIDDEN, Message: "only the renter or an admin of the organisation may open this rental's workspace", Key: "err.workspace_forbidden"}
	}
	return workspaceOf(&r)
}

// workspaceOf is a running rental's workspace.
func workspaceOf(r *models.Rental) (*Workspace, error) {
	if r.Status != models.RentalRunning || r.NodeID == nil {
		return nil, errNotRunning
	}
	acc := agent.ParseAccess(r.Access)
	if acc == nil || !acc.Container {
		return nil, &apperr.Error{Code: apperr.ECONFLICT, Message: "this rental's node runs no container the browser can open (a simulated or script launcher)", Key: "err.workspace_no_container"}
	}
	return &Workspace{RentalID: r.ID, NodeID: *r.NodeID, Jupyter: acc.Jupyter != nil, Ports: r.DeclaredPorts()}, nil
}

// Share link lifetimes a renter may choose.
const (
	MinShareTTL = time.Hour
	MaxShareTTL = 7 * 24 * time.Hour
)

// SharePrefix starts every share token, so that one found in a log or a
// chat says what it is.
const SharePrefix = "shr_"

// tokenHash is what is stored of a token: a share link's, an apps ticket or session.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateShare makes a share link for a declared port of a rental u may
// work in, valid for ttl (MinShareTTL to MaxShareTTL), and returns its
// token (shown once; only its hash is kept).
func (s *Service) CreateShare(ctx context.Context, u *models.User, rentalID int64, port int, ttl time.Duration) (string, *models.PortShare, error) {
	ws, err := s.For(ctx, u, rentalID)
	if err != nil && apperr.Code(err) != apperr.ECONFLICT {
		return "", nil, err
	}
	if ws == nil {
		// A stopped rental may be shared ahead of its next start.
		r, rerr := s.DB.RentalByID(ctx, rentalID)
		if rerr != nil {
			return "", nil, rerr
		}
		if r.Released() || r.Status == models.RentalFailed {
			return "", nil, err
		}
		ws = &Workspace{RentalID: r.ID, Ports: r.DeclaredPorts()}
	}
	if !ws.HasPort(port) {
		return "", nil, apperr.Field("port", "err.port_not_declared", port)
	}
	if ttl < MinShareTTL || ttl > MaxShareTTL {
		return "", nil, apperr.Field("hours", "err.share_ttl", int(MinShareTTL/time.Hour), int(MaxShareTTL/time.Hour))
	}
	token, err := newToken(SharePrefix)
	if err != nil {
		return "", nil, err
	}
	now := s.DB.Now()
	sh := &models.PortShare{RentalID: rentalID, Port: port, TokenHash: tokenHash(token), CreatedBy: u.ID, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if err := rentalstore.InsertPortShare(ctx, s.DB, sh); err != nil {
		return "", nil, err
	}
	return token, sh, nil
}

// RevokeShare ends a share link of a rental u may work in.
func (s *Service) RevokeShare(ctx context.Context, u *models.User, rentalID, shareID int64) error {
	if err := s.mayWork(ctx, u, rentalID); err != nil {
		return err
	}
	found, err := rentalstore.RevokePortShare(ctx, s.DB, rentalID, shareID, s.DB.Now())
	if err != nil {
		return err
	}
	if !found {
		return apperr.NotFound("share link")
	}
	return nil
}

// Shares are a rental's live share links, for whoever may work in it.
func (s *Service) Shares(ctx context.Context, rentalID int64) ([]models.PortShare, error) {
	return rentalstore.LivePortShares(ctx, s.DB, rentalID, s.DB.Now())
}

// SharesFor are a rental's live share links, for a user who may work in
// it (whatever its status: a stopped rental keeps its links).
func (s *Service) SharesFor(ctx context.Context, u *models.User, rentalID int64) ([]models.PortShare, error) {
	if err := s.mayWork(ctx, u, rentalID); err != nil {
		return nil, err
	}
	return s.Shares(ctx, rentalID)
}

// mayStillWork reports whether the user userID may work in r today (a
// user or a membership that is gone may not; a failed read is an error).
func (s *Service) mayStillWork(ctx context.Context, r *models.Rental, userID int64) (bool, error) {
	u, err := s.DB.UserByID(ctx, userID)
	if apperr.Code(err) == apperr.ENOTFOUND {
		return false, nil
	}
	if err != nil || u.SuspendedAt != nil {
		return false, err
	}
	m, err := s.DB.MembershipOf(ctx, r.OrgID, userID)
	if apperr.Code(err) == apperr.ENOTFOUND {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return CanWork(r, u, m), nil
}

// Recheck answers whether u still may work in the rental (and it still
// runs), for a connection that lasts: an error ends it.
func (s *Service) Recheck(ctx context.Context, u *models.User, rentalID int64) error {
	fresh, err := s.DB.UserByID(ctx, u.ID)
	if err != nil {
		return err
	}
	if fresh.SuspendedAt != nil || fresh.SessionEpoch != u.SessionEpoch {
		return apperr.Errorf(apperr.EUNAUTHORIZED, "the session ended")
	}
	_, err = s.For(ctx, fresh, rentalID)
	return err
}

// mayWork checks that u may work in the rental, whatever its status.
func (s *Service) mayWork(ctx context.Context, u *models.User, rentalID int64) error {
	_, err := s.For(ctx, u, rentalID)
	if apperr.Code(err) == apperr.ECONFLICT {
		return nil
	}
	return err
}

// SharedWorkspace is the running rental and port a share token opens:
// ENOTFOUND for a token that is unknown, expired or revoked (all alike),
// ECONFLICT while the rental is not running.
func (s *Service) SharedWorkspace(ctx context.Context, token string) (*Workspace, int, error) {
	if !strings.HasPrefix(token, SharePrefix) || len(token) > 100 {
		return nil, 0, apperr.NotFound("share link")
	}
	sh, err := rentalstore.PortShareByHash(ctx, s.DB, tokenHash(token))
	if err != nil {
		return nil, 0, err
	}
	if !sh.Live(s.DB.Now()) {
		return nil, 0, apperr.NotFound("share link")
	}
	r, err := s.DB.RentalByID(ctx, sh.RentalID)
	if err != nil {
		return nil, 0, err
	}
	// A link is its maker's: it opens nothing once they may no longer
	// work in the rental (left the organisation, lost the role, were
	// suspended).
	may, err := s.mayStillWork(ctx, &r, sh.CreatedBy)
	if err != nil {
		return nil, 0, err
	}
	if !may {
		return nil, 0, apperr.NotFound("share link")
	}
	ws, err := workspaceOf(&r)
	if err != nil {
		return nil, 0, err
	}
	if !ws.HasPort(sh.Port) {
		return nil, 0, apperr.NotFound("share link")
	}
	return ws, sh.Port, nil
}
