package rentals_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"suanli/agent"
	"suanli/apperr"
	"suanli/dbtest"
	"suanli/images"
	"suanli/models"
	"suanli/rentals"
	"suanli/secrets"
	"suanli/volumes"
)

// authRecorder is the simulated launcher, remembering the registry
// credential each launch came with, by rental.
type authRecorder struct {
	*agent.SimulatedLauncher
	mu    sync.Mutex
	auths map[int64][]string
}

func (l *authRecorder) Launch(ctx context.Context, spec agent.LaunchSpec) (*agent.Access, error) {
	l.mu.Lock()
	l.auths[spec.RentalID] = append(l.auths[spec.RentalID], spec.RegistryAuth)
	l.mu.Unlock()
	return l.SimulatedLauncher.Launch(ctx, spec)
}

func (l *authRecorder) of(rentalID int64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.auths[rentalID]...)
}

// testBox is the registry credentials' box under a new random key.
func testBox(t *testing.T) *secrets.Box {
	t.Helper()
	k, err := secrets.ParseKey(secrets.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return k.Box(images.RegistryAuthPurpose)
}

// uniquePassword is a password no other row could hold by chance.
func uniquePassword(t *testing.T) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "pw-" + hex.EncodeToString(b) + "-ünï"
}

// pullAuth decodes an X-Registry-Auth value.
func pullAuth(t *testing.T, v string) (user, password, server string) {
	t.Helper()
	b, err := base64.URLEncoding.DecodeString(v)
	if err != nil {
		t.Fatalf("X-Registry-Auth %q is not base64url: %v", v, err)
	}
	var a struct{ Username, Password, ServerAddress string }
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("X-Registry-Auth %q: %v", b, err)
	}
	return a.Username, a.Password, a.ServerAddress
}

// A renter's registry credentials for a custom image: stored sealed, so
// that the password is in no row of the database (the rental, its agent
// tasks, jobs, events), opened only when a launch task is handed to the
// node's agent — which gets exactly the credential, again on every launch
// (a start after a stop) — and forgotten at release. Bad credentials are
// refused naming registry_auth, with nothing made; a sealed value that
// was changed fails the launch saying why, and the agent never gets it.
func TestRegistryCredentialsReachOnlyTheAgent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{Credentials: testBox(t)})
		o := r.rtxOffer()
		if err := db.W.Model(&models.Offer{}).Where("id = ?", o.ID).Update("custom_images", true).Error; err != nil {
			t.Fatal(err)
		}
		rec := &authRecorder{SimulatedLauncher: &agent.SimulatedLauncher{Host: "rtx.sim.invalid"}, auths: map[int64][]string{}}
		r.launcher = rec
		node := r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		const ref = "registry.example.cn:5000/lab/train:v1"
		pw := uniquePassword(t)
		count := func(table string) int64 {
			var n int64
			if err := db.R.Table(table).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}

		t.Run("bad credentials are refused and nothing is made", func(t *testing.T) {
			noKey := *r.rentals
			noKey.Credentials = nil
			for _, c := range []struct {
				name, image string
				auth        images.RegistryAuth
				svc         *rentals.Service
				key         string
			}{
				{"with a catalogue image", "debian-sshd", images.RegistryAuth{Username: "bob", Password: pw}, r.rentals, "images.err.registry_auth_custom_only"},
				{"with the offer's default image", "", images.RegistryAuth{Username: "bob", Password: pw}, r.rentals, "images.err.registry_auth_custom_only"},
				{"no password", ref, images.RegistryAuth{Username: "bob"}, r.rentals, "images.err.registry_password_missing"},
				{"no username", ref, images.RegistryAuth{Password: pw}, r.rentals, "images.err.registry_username_missing"},
				{"a NUL in the password", ref, images.RegistryAuth{Username: "bob", Password: "pa\x00ss"}, r.rentals, "images.err.registry_password"},
				{"a line break in the password", ref, images.RegistryAuth{Username: "bob", Password: "pa\nss"}, r.rentals, "images.err.registry_password"},
				{"a password that is not UTF-8", ref, images.RegistryAuth{Username: "bob", Password: "pa\xffss"}, r.rentals, "images.err.registry_password"},
				{"a NUL in the username", ref, images.RegistryAuth{Username: "b\x00b", Password: pw}, r.rentals, "images.err.registry_username"},
				{"a colon in the username", ref, images.RegistryAuth{Username: "bob:x", Password: pw}, r.rentals, "images.err.registry_username"},
				{"spaces around the username", ref, images.RegistryAuth{Username: " bob ", Password: pw}, r.rentals, "images.err.registry_username"},
				{"a password too long", ref, images.RegistryAuth{Username: "bob", Password: strings.Repeat("p", images.MaxRegistryPassword+1)}, r.rentals, "images.err.registry_password_long"},
				{"a username too long", ref, images.RegistryAuth{Username: strings.Repeat("u", images.MaxRegistryUsername+1), Password: pw}, r.rentals, "images.err.registry_username_long"},
				{"no platform key", ref, images.RegistryAuth{Username: "bob", Password: pw}, &noKey, "images.err.registry_auth_unavailable"},
			} {
				before := count("rentals")
				in := rentals.RentInput{OrgID: r.org.ID, OfferID: o.ID, GPUs: 1, SLA: "standard", SSHPublicKey: sshKey(t), Image: c.image, RegistryAuth: &c.auth}
				_, err := c.svc.Rent(r.ctx, r.user, r.org, r.member, in)
				e, ok := apperr.As(err)
				if !ok || e.Code != apperr.EINVALID || e.Field != "registry_auth" || e.Key != c.key {
					t.Errorf("%s: %#v, want %s on registry_auth", c.name, err, c.key)
					continue
				}
				if strings.Contains(e.Message, pw) || strings.Contains(e.Error(), "pa\x00ss") {
					t.Errorf("%s: the refusal repeats the password: %q", c.name, e.Message)
				}
				if count("rentals") != before || count("rental_registry_auths") != 0 {
					t.Errorf("%s: a refused rent made a rental or stored a credential", c.name)
				}
			}
			if got := dbtest.Find(t, db, []byte(pw)); len(got) > 0 {
				t.Errorf("refused rents left the password in %v", got)
			}
		})

		rt := r.mustRent(o.ID, 1, func(in *rentals.RentInput) {
			in.Image = ref
			in.RegistryAuth = &images.RegistryAuth{Username: "bob", Password: pw}
		})
		r.waitStatus(rt.ID, models.RentalRunning)
		got := rec.of(rt.ID)
		if len(got) != 1 {
			t.Fatalf("launches of the rental: %d, want 1", len(got))
		}
		if u, p, srv := pullAuth(t, got[0]); u != "bob" || p != pw || srv != "registry.example.cn:5000" {
			t.Errorf("the agent pulled with %q / %q at %q, want bob, the password, registry.example.cn:5000", u, p, srv)
		}
		plain := r.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.Image = "debian-sshd" })
		r.waitStatus(plain.ID, models.RentalRunning)
		if a := rec.of(plain.ID); len(a) != 1 || a[0] != "" {
			t.Errorf("a rental without credentials launched with %q", a)
		}

		if where := dbtest.Find(t, db, []byte(pw), []byte(got[0])); len(where) > 0 {
			t.Errorf("the password (or the agent's credential) is stored in %v", where)
		}
		var tasks []models.AgentTask
		if err := db.R.Where("rental_id = ?", rt.ID).Find(&tasks).Error; err != nil || len(tasks) < 2 {
			t.Fatalf("the rental's agent tasks: %d %v", len(tasks), err)
		}
		for _, at := range tasks {
			if strings.Contains(at.Payload, "registry_auth") {
				t.Errorf("task %d (%s) is stored with a credential: %s", at.ID, at.Kind, at.Payload)
			}
		}
		d, err := r.rentals.Detail(r.ctx, rt.ID)
		if err != nil || d.RegistryUser != "bob" {
			t.Fatalf("detail: registry user %q %v, want bob", d.RegistryUser, err)
		}

		// Stop and start: the new launch is handed the credential again.
		r.stop(rt.ID)
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{}); err != nil {
			t.Fatal(err)
		}
		r.waitStatus(rt.ID, models.RentalRunning)
		if got := rec.of(rt.ID); len(got) != 2 || got[1] != got[0] {
			t.Errorf("launches after a start: %d, the second with the same credential: %v", len(got), len(got) == 2 && got[1] == got[0])
		}

		t.Run("a changed sealed value fails the launch and never reaches the agent", func(t *testing.T) {
			node.Pause()
			rt2 := r.mustRent(o.ID, 1, func(in *rentals.RentInput) {
				in.Image = ref
				in.RegistryAuth = &images.RegistryAuth{Username: "eve", Password: pw}
			})
			var sealed string
			if err := db.R.Model(&models.RentalRegistryAuth{}).Where("rental_id = ?", rt2.ID).Pluck("sealed_password", &sealed).Error; err != nil {
				t.Fatal(err)
			}
			raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, "v1."))
			if err != nil {
				t.Fatal(err)
			}
			raw[len(raw)-1] ^= 1
			tampered := "v1." + base64.RawURLEncoding.EncodeToString(raw)
			if err := db.W.Model(&models.RentalRegistryAuth{}).Where("rental_id = ?", rt2.ID).Update("sealed_password", tampered).Error; err != nil {
				t.Fatal(err)
			}
			node.Resume()
			failed := r.waitStatus(rt2.ID, models.RentalFailed)
			if e := r.event(rt2.ID, "node_failed"); !strings.Contains(e.Detail, "cannot be opened with the platform's secret key") {
				t.Errorf("rental %s (%q): node_failed %q, want the reason", failed.Status, failed.Failure, e.Detail)
			}
			if a := rec.of(rt2.ID); len(a) != 0 {
				t.Errorf("the agent got the launch %d times", len(a))
			}
			var kept int64
			db.R.Model(&models.RentalRegistryAuth{}).Where("rental_id = ?", rt2.ID).Count(&kept)
			if kept != 0 {
				t.Errorf("a failed rental keeps its registry credential")
			}
		})

		// Release: the credential is forgotten.
		if _, err := r.rentals.Release(r.ctx, rt.ID, true); err != nil {
			t.Fatal(err)
		}
		var left int64
		db.R.Model(&models.RentalRegistryAuth{}).Where("rental_id = ?", rt.ID).Count(&left)
		if left != 0 {
			t.Errorf("a released rental keeps its registry credential")
		}
		if d, err := r.rentals.Detail(r.ctx, rt.ID); err != nil || d.RegistryUser != "" {
			t.Errorf("released: registry user %q %v", d.RegistryUser, err)
		}

		// A stopped rental whose volume goes after its days never starts
		// again: its credential goes with the volume.
		rt3 := r.mustRent(o.ID, 1, func(in *rentals.RentInput) {
			in.Image = ref
			in.RegistryAuth = &images.RegistryAuth{Username: "bob", Password: pw}
		})
		r.waitStatus(rt3.ID, models.RentalRunning)
		r.stop(rt3.ID)
		r.clock.Advance(time.Duration(volumes.DefaultKeepDays+1) * 24 * time.Hour)
		if res := r.meter(); res.VolumesDeleted != 1 {
			t.Fatalf("%d volumes deleted after the days, want 1", res.VolumesDeleted)
		}
		db.R.Model(&models.RentalRegistryAuth{}).Where("rental_id = ?", rt3.ID).Count(&left)
		if left != 0 {
			t.Errorf("a rental whose volume was deleted keeps its registry credential")
		}
	})
}
