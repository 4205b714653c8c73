package rentals_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/listing"
	"suanli/offers"
	"suanli/providers"
	"suanli/rentals"
	"suanli/sla"
)

// provFixture is a rig with one provider (owner, a datacentre) and a
// platform admin.
type provFixture struct {
	*rig
	p     *providers.Service
	owner *models.User
	admin *models.User
	acc   *providers.Account
	dc    *models.Datacenter
	sims  int
}

var goodProfile = providers.Profile{CompanyName: "Tianfu GPU Co", ContactName: "Li Wei", ContactPhone: "+86 28 8888 0000",
	ContactEmail: "ops@tianfu-gpu.example", LicenceNo: "91510100MA6CXXXX1X", BankName: "Bank of Chengdu",
	BankAccountName: "Tianfu GPU Co", BankAccountNo: "6222 0000 1111 2222"}

// newProvFixture signs a provider up; approve has a platform admin verify it.
func newProvFixture(t *testing.T, db *models.DB, approve bool) *provFixture {
	t.Helper()
	r := newRig(t, db, rigOptions{InsertOnly: true})
	f := &provFixture{rig: r, p: &providers.Service{DB: db, Rentals: r.rentals, BaseURL: "https://suanli.test"}}
	var err error
	if f.owner, err = r.accounts.CreateUser(r.ctx, "owner@tianfu-gpu.example", "owner-pass-2026", "Owner", false); err != nil {
		t.Fatal(err)
	}
	if f.admin, err = r.accounts.CreateUser(r.ctx, "root@suanli.example", "admin-pass-2026", "Admin", true); err != nil {
		t.Fatal(err)
	}
	if f.acc, err = f.p.SignUp(r.ctx, f.owner, goodProfile); err != nil {
		t.Fatal(err)
	}
	if approve {
		f.approve()
	}
	if f.dc, err = f.p.CreateDatacenter(r.ctx, f.owner, f.acc.Provider.ID, providers.DatacenterInput{NameZH: "天府一号机房", NameEN: "Tianfu One",
		City: "chengdu", DistrictZH: "天府新区", Latencies: []providers.DeclaredLatency{{FromCity: "chengdu", RTTms: 1.5}}}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *provFixture) approve() {
	f.t.Helper()
	if err := f.accounts.Review(f.ctx, f.admin, f.acc.Org.ID, true, ""); err != nil {
		f.t.Fatal(err)
	}
}

// addNode adds a node and returns it with its registration token.
func (f *provFixture) addNode(name string) (*models.Node, string) {
	f.t.Helper()
	n, tok, err := f.p.AddNode(f.ctx, f.owner, f.acc.Provider.ID, providers.NodeInput{DatacenterID: f.dc.ID, Name: name})
	if err != nil {
		f.t.Fatal(err)
	}
	return n, tok
}

// report sends one heartbeat of a simulated system (dgxa100…) with
// bearer and returns the node credential (the bearer once registered).
func (f *provFixture) report(bearer, system string) string {
	f.t.Helper()
	f.sims++
	uuids := make([]string, 8)
	for i := range uuids {
		uuids[i] = fmt.Sprintf("GPU-prov%02d-0000-0000-0000-%012d", f.sims, i)
	}
	sim, err := gpu.Simulate(system, 8, gpu.WithUUIDs(uuids))
	if err != nil {
		f.t.Fatal(err)
	}
	reader, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	defer reader.Close()
	// Its nodes run simulated agents: a test provider, as `suanli admin
	// create-user … --simulated` makes (issue 17).
	if err := f.db.W.Model(&models.Provider{}).Where("id = ?", f.acc.Provider.ID).Update("simulated", true).Error; err != nil {
		f.t.Fatal(err)
	}
	reply, err := f.rentals.Fleet().Heartbeat(f.ctx, bearer, agent.Heartbeat{AgentVersion: "test", Hostname: "gpu-host", Launcher: "simulated", Host: reader.Read()})
	if err != nil {
		f.t.Fatal(err)
	}
	if reply.Credential != "" {
		return reply.Credential
	}
	return bearer
}

func (f *provFixture) offerInput(nodeID int64, model string) providers.OfferInput {
	return providers.OfferInput{NodeID: nodeID, GPU: model, MaxGPUs: 8, PricePerGPUHourFen: 900}
}

func (f *provFixture) mustOffer(in providers.OfferInput) *models.Offer {
	f.t.Helper()
	o, err := f.p.CreateOffer(f.ctx, f.owner, f.acc.Provider.ID, in)
	if err != nil {
		f.t.Fatal(err)
	}
	return o
}

// publicIDs are the offer ids the public list shows.
func (f *provFixture) publicIDs() []int64 {
	f.t.Helper()
	rows, _, err := listing.All(f.ctx, f.db)
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

func (f *provFixture) reload(o *models.Offer) models.Offer {
	f.t.Helper()
	var out models.Offer
	if err := f.db.R.First(&out, o.ID).Error; err != nil {
		f.t.Fatal(err)
	}
	return out
}

func fieldsOf(err error) map[string]string {
	out := map[string]string{}
	if fs, ok := err.(apperr.Fields); ok {
		for _, e := range fs {
			out[e.Field] = e.Message
		}
	}
	return out
}

func TestProviderSignUpListsNothingUntilApproved(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, false)
		bad := goodProfile
		bad.CompanyName, bad.ContactPhone, bad.ContactEmail, bad.LicenceNo, bad.BankAccountNo = " ", "call me", "nobody", "x", ""
		_, err := f.p.SignUp(f.ctx, f.owner, bad)
		got := fieldsOf(err)
		for _, field := range []string{"company_name", "contact_phone", "contact_email", "licence_no", "bank_account_no"} {
			if got[field] == "" {
				t.Errorf("sign-up with a bad %s: no message for it (%v)", field, err)
			}
		}
		if f.acc.Org.Status != models.OrgPending || f.acc.Role != models.RoleOwner || f.acc.Provider.LicenceNo != "91510100MA6CXXXX1X" {
			t.Fatalf("signed up as %+v", f.acc)
		}
		n, tok := f.addNode("gpu-host-1")
		f.report(tok, "dgxa100")
		o := f.mustOffer(f.offerInput(n.ID, "a100-40g-sxm"))
		if o.AwaitingNode || providers.OfferPublic(o) || !strings.Contains(o.ListingNote, "verified") {
			t.Errorf("a pending provider's offer: awaiting %v, public %v, note %q; want hidden until verified", o.AwaitingNode, providers.OfferPublic(o), o.ListingNote)
		}
		if slices.Contains(f.publicIDs(), o.ID) {
			t.Fatal("a pending provider's offer is in the public list")
		}
		// The serving processes' in-memory index must notice the approval
		// by itself (through the offers version), not only the database.
		ix := offers.NewIndex(db)
		if _, err := ix.Refresh(f.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Offer(o.ID); err == nil {
			t.Fatal("a pending provider's offer is in the offer index")
		}
		if _, err := f.rent(o.ID, 1); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("renting a pending provider's offer: %v, want a conflict", err)
		}
		f.approve()
		if !slices.Contains(f.publicIDs(), o.ID) {
			t.Fatal("the approved provider's offer is not in the public list")
		}
		if changed, err := ix.Refresh(f.ctx); err != nil || !changed {
			t.Fatalf("offer index after the approval: changed %v, %v; want a reload", changed, err)
		}
		if _, err := ix.Offer(o.ID); err != nil {
			t.Errorf("the approved provider's offer is not in the offer index: %v", err)
		}
		if got, _ := f.p.Offer(f.ctx, f.owner, f.acc.Provider.ID, o.ID); !providers.OfferPublic(got) {
			t.Errorf("after approval the provider sees its offer as %+v", got)
		}
		if _, err := f.rent(o.ID, 1); err != nil {
			t.Errorf("renting after approval: %v", err)
		}
	})
}

func TestProviderOfferValidation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		n, tok := f.addNode("gpu-host-1")
		f.report(tok, "dgxa100")
		fen := func(v int64) *int64 { return &v }
		cases := []struct {
			name, field, msg string
			change           func(*providers.OfferInput)
		}{
			{"unknown model", "gpu", "not a GPU model of the catalogue", func(in *providers.OfferInput) { in.GPU = "a100-99g" }},
			{"no node", "node_id", "Required", func(in *providers.OfferInput) { in.NodeID = 0 }},
			{"another's node", "node_id", "one of your nodes", func(in *providers.OfferInput) { in.NodeID = 1 }},
			{"zero GPUs", "gpus", "1 to 8", func(in *providers.OfferInput) { in.MaxGPUs = 0 }},
			{"more GPUs than the node", "gpus", "1 to 8", func(in *providers.OfferInput) { in.MaxGPUs = 9 }},
			{"free", "price_per_gpu_hour_fen", "above 0", func(in *providers.OfferInput) { in.PricePerGPUHourFen = 0 }},
			{"absurd price", "price_per_gpu_hour_fen", "at most", func(in *providers.OfferInput) { in.PricePerGPUHourFen = 100_000_000 }},
			{"weekly above hourly", "weekly_price_per_gpu_fen", "below a week", func(in *providers.OfferInput) { in.WeeklyPricePerGPUFen = fen(7 * 24 * 900) }},
			{"monthly above hourly", "monthly_price_per_gpu_fen", "below 30 days", func(in *providers.OfferInput) { in.MonthlyPricePerGPUFen = fen(30*24*900 + 1) }},
			{"discount", "offpeak_discount_pct", "0 to 90", func(in *providers.OfferInput) { in.OffpeakDiscountPct = 95 }},
			{"student discount", "student_discount_pct", "0 to 90", func(in *providers.OfferInput) { in.StudentDiscountPct = -1 }},
			{"short minimum", "min_duration_s", "60 to", func(in *providers.OfferInput) { in.MinDurationS = 30 }},
			{"tier", "sla_tiers", "not an SLA tier", func(in *providers.OfferInput) { in.SLATiers = []string{"gold"} }},
			{"interconnect", "interconnect", "pcie, nvlink or nvlink-ib", func(in *providers.OfferInput) { in.Interconnect = "ethernet" }},
			{"vcpu", "vcpu_per_gpu", "1 to 256", func(in *providers.OfferInput) { in.VCPUPerGPU = 1000 }},
		}
		for _, c := range cases {
			in := f.offerInput(n.ID, "a100-40g-sxm")
			c.change(&in)
			_, err := f.p.CreateOffer(f.ctx, f.owner, f.acc.Provider.ID, in)
			if msg := fieldsOf(err)[c.field]; !strings.Contains(msg, c.msg) {
				t.Errorf("%s: field %s says %q, want %q (%v)", c.name, c.field, msg, c.msg, err)
			}
		}
		o := f.mustOffer(providers.OfferInput{NodeID: n.ID, GPU: "a100-40g-sxm", MaxGPUs: 4, PricePerGPUHourFen: 900, WeeklyPricePerGPUFen: fen(120000),
			MinDurationS: 3600, SLATiers: []string{"premium"}})
		if o.SLATiers != "premium" || o.MinDurationS != 3600 || o.Interconnect != "nvlink" || !providers.OfferPublic(o) {
			t.Errorf("offer stored as %+v", o)
		}
		// A patch is validated the same way, and a rent keeps to the offer's terms.
		price := int64(0)
		if _, err := f.p.UpdateOffer(f.ctx, f.owner, f.acc.Provider.ID, o.ID, providers.OfferPatch{PricePerGPUHourFen: &price}); fieldsOf(err)["price_per_gpu_hour_fen"] == "" {
			t.Errorf("patching a zero price: %v", err)
		}
		if _, err := f.rent(o.ID, 1, func(in *rentals.RentInput) { in.SLA = "standard" }); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("renting a tier the offer does not sell: %v", err)
		}
		rt, err := f.rent(o.ID, 1, func(in *rentals.RentInput) { in.SLA = "premium" })
		if err != nil || rt.MinBilledS != 3600 {
			t.Errorf("rent: %+v %v; want min billed 3600 s", rt, err)
		}
		// A member who is not an owner or admin cannot change anything;
		// another provider's owner sees nothing.
		member, _ := f.accounts.CreateUser(f.ctx, "member@tianfu-gpu.example", "member-pass-2026", "Member", false)
		if err := f.db.Tx(f.ctx, func(tx *gorm.DB) error {
			return models.AddMember(tx, &models.Membership{OrgID: f.acc.Org.ID, UserID: member.ID, Role: models.RoleMember, CreatedAt: f.clock.Now()})
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.p.CreateOffer(f.ctx, member, f.acc.Provider.ID, f.offerInput(n.ID, "a100-40g-sxm")); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a member creating an offer: %v", err)
		}
		if _, err := f.p.Offers(f.ctx, member, f.acc.Provider.ID); err != nil {
			t.Errorf("a member reading offers: %v", err)
		}
		if _, err := f.p.Offers(f.ctx, f.user, f.acc.Provider.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a renter reading the provider's offers: %v", err)
		}
		if _, err := f.p.Offers(f.ctx, f.admin, f.acc.Provider.ID); err != nil {
			t.Errorf("a platform admin reading offers: %v", err)
		}
		if _, err := f.p.UpdateOffer(f.ctx, f.admin, f.acc.Provider.ID, o.ID, providers.OfferPatch{}); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a platform admin changing an offer: %v", err)
		}
	})
}

func TestProviderOfferMustMatchTheNodesGPUs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		n, tok := f.addNode("gpu-host-1")
		a100 := f.mustOffer(f.offerInput(n.ID, "a100-40g-sxm"))
		h100 := f.mustOffer(f.offerInput(n.ID, "h100-sxm"))
		for _, o := range []*models.Offer{a100, h100} {
			if !o.AwaitingNode || o.ListingNote != fleet.NoteAwaitingReport {
				t.Errorf("offer %s before the node reported: awaiting %v %q", o.GPUModel, o.AwaitingNode, o.ListingNote)
			}
		}
		if ids := f.publicIDs(); slices.Contains(ids, a100.ID) || slices.Contains(ids, h100.ID) {
			t.Fatal("an offer waiting for its node is in the public list")
		}
		v0, _ := db.OffersVersion(f.ctx)
		cred := f.report(tok, "dgxa100")
		var node models.Node
		db.R.First(&node, n.ID)
		if node.GPUModel != "a100-40g-sxm" || node.Health != models.NodeHealthy {
			t.Fatalf("node after its first inventory: model %q health %s", node.GPUModel, node.Health)
		}
		got := f.reload(a100)
		if got.AwaitingNode || got.ListingNote != "" || got.AvailableGPUs != 8 || !slices.Contains(f.publicIDs(), a100.ID) {
			t.Errorf("the matching offer after the inventory: %+v", got)
		}
		if v1, _ := db.OffersVersion(f.ctx); v1 <= v0 {
			t.Errorf("offers version %d → %d: the index would not see the new offer", v0, v1)
		}
		got = f.reload(h100)
		if !got.AwaitingNode || !strings.Contains(got.ListingNote, "A100-SXM4-40GB") || !strings.Contains(got.ListingNote, "h100-sxm") {
			t.Errorf("the mismatched offer after the inventory: awaiting %v note %q", got.AwaitingNode, got.ListingNote)
		}
		_, err := f.p.CreateOffer(f.ctx, f.owner, f.acc.Provider.ID, f.offerInput(n.ID, "h100-sxm"))
		msg := fieldsOf(err)["gpu"]
		// go-nvml's mock names its devices "Mock NVIDIA A100-SXM4-40GB".
		want := "NVIDIA A100-SXM4-40GB (a100-40g-sxm); this offer is for h100-sxm"
		if !strings.HasPrefix(msg, "node gpu-host-1 reports 8 × ") || !strings.HasSuffix(msg, want) {
			t.Errorf("an h100 offer on an A100 node: %q, want %q (%v)", msg, want, err)
		}
		// Later heartbeats keep the model.
		f.report(cred, "dgxa100")
		db.R.First(&node, n.ID)
		if node.GPUModel != "a100-40g-sxm" {
			t.Errorf("model after another heartbeat: %q", node.GPUModel)
		}
	})
}

func TestProviderDrainAndRemove(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		n, tok := f.addNode("gpu-host-1")
		cred := f.report(tok, "dgxa100")
		o := f.mustOffer(f.offerInput(n.ID, "a100-40g-sxm"))
		rt := f.mustRent(o.ID, 2)
		pid := f.acc.Provider.ID
		if err := f.p.SetNodeStatus(f.ctx, f.owner, pid, n.ID, providers.NodeDrain); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(f.publicIDs(), o.ID) {
			t.Error("a draining node's offer is in the public list")
		}
		if got, _ := f.p.Offer(f.ctx, f.owner, pid, o.ID); providers.OfferPublic(got) || !strings.Contains(got.ListingNote, "draining") {
			t.Errorf("the provider sees its drained offer as %+v", got)
		}
		if _, err := f.rent(o.ID, 1); apperr.Code(err) != apperr.ECONFLICT || !strings.Contains(err.Error(), "draining") {
			t.Errorf("renting on a draining node: %v", err)
		}
		if st := f.rental(rt.ID).Status; !slices.Contains(models.LiveRentalStatuses, st) {
			t.Errorf("the current rental became %s on drain", st)
		}
		err := f.p.SetNodeStatus(f.ctx, f.owner, pid, n.ID, providers.NodeRemove)
		if apperr.Code(err) != apperr.ECONFLICT || !strings.Contains(err.Error(), "1 live rental") {
			t.Errorf("removing a node with a live rental: %v", err)
		}
		// Resume lists the offer again.
		if err := f.p.SetNodeStatus(f.ctx, f.owner, pid, n.ID, providers.NodeResume); err != nil || !slices.Contains(f.publicIDs(), o.ID) {
			t.Errorf("resume: %v, listed %v", err, slices.Contains(f.publicIDs(), o.ID))
		}
		// The rental ends; the node can go. It had fallen silent: its open
		// incident closes with the removal.
		if err := db.W.Model(&models.Rental{}).Where("id = ?", rt.ID).Update("status", models.RentalStopped).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Create(&models.Incident{NodeID: n.ID, Kind: "node_silent", OpenedAt: f.clock.Now()}).Error; err != nil {
			t.Fatal(err)
		}
		if err := f.p.SetNodeStatus(f.ctx, f.owner, pid, n.ID, providers.NodeRemove); err != nil {
			t.Fatal(err)
		}
		var open int64
		if err := db.R.Model(&models.Incident{}).Where("node_id = ? AND closed_at IS NULL", n.ID).Count(&open).Error; err != nil || open != 0 {
			t.Errorf("a removed node has %d open incidents (%v), want none", open, err)
		}
		got := f.reload(o)
		if got.Status != models.OfferPaused || slices.Contains(f.publicIDs(), o.ID) {
			t.Errorf("offer of a removed node: %+v", got)
		}
		if _, err := f.rentals.Fleet().Heartbeat(f.ctx, cred, agent.Heartbeat{AgentVersion: "test"}); apperr.Code(err) != apperr.EUNAUTHORIZED {
			t.Errorf("a removed node's agent: %v, want unauthorized", err)
		}
		if _, err := f.p.UpdateOffer(f.ctx, f.owner, pid, o.ID, providers.OfferPatch{Status: ptr(models.OfferListed)}); fieldsOf(err)["node_id"] == "" {
			t.Errorf("listing an offer of a removed node: %v", err)
		}
		// The same host can be added again as a new node.
		n2, tok2 := f.addNode("gpu-host-1b")
		f.sims-- // the same UUIDs as before
		f.report(tok2, "dgxa100")
		var gpus int64
		db.R.Model(&models.GPU{}).Where("node_id = ?", n2.ID).Count(&gpus)
		if gpus != 8 {
			t.Errorf("the re-added host stored %d GPUs", gpus)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestProviderCapacityAndStatement(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		n, tok := f.addNode("gpu-host-1")
		f.report(tok, "dgxa100")
		month := int64(30 * 24 * 800)
		o := f.mustOffer(providers.OfferInput{NodeID: n.ID, GPU: "a100-40g-sxm", MaxGPUs: 8, PricePerGPUHourFen: 900, MonthlyPricePerGPUFen: &month})
		pid := f.acc.Provider.ID
		onDemand := f.mustRent(o.ID, 2)
		term := f.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.Term = "month" })
		st, err := f.p.Statement(f.ctx, f.owner, pid, "")
		if err != nil {
			t.Fatal(err)
		}
		ends := st.From.AddDate(0, 0, 10)
		if err := db.W.Model(&models.Rental{}).Where("id = ?", term.ID).Update("ends_at", ends).Error; err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(10 * time.Hour)
		c, err := f.p.Capacity(f.ctx, f.owner, pid)
		if err != nil || len(c.Nodes) != 1 {
			t.Fatalf("capacity: %+v %v", c, err)
		}
		nc := c.Nodes[0]
		if nc.Total != 8 || nc.Free != 5 || nc.Rented != 2 || nc.Reserved != 1 || nc.Unhealthy != 0 {
			t.Errorf("capacity now: total %d free %d rented %d reserved %d unhealthy %d; want 8 5 2 1 0", nc.Total, nc.Free, nc.Rented, nc.Reserved, nc.Unhealthy)
		}
		if !c.From.Equal(st.From) && c.From.Before(st.From) {
			t.Errorf("capacity from %v", c.From)
		}
		days := int(ends.Sub(c.From).Hours() / 24)
		for d, v := range nc.Committed {
			want := 0
			if d < days {
				want = 1
			}
			if v != want {
				t.Errorf("committed on day %d: %d, want %d", d, v, want)
			}
		}
		// 3 of 8 GPUs held for the node's whole 10 hours.
		if math.Abs(nc.Utilisation30dPct-37.5) > 0.001 {
			t.Errorf("utilisation %.4f%%, want 37.5%%", nc.Utilisation30dPct)
		}

		// A small known ledger: rental 1 charged ¥100.00 (12% commission)
		// with a ¥1.50 SLA credit; rental 2 charged ¥50.00 and refunded;
		// ¥10.00 charged last month.
		now := f.clock.Now()
		post := func(kind string, rentalID int64, at time.Time, legs ...ledger.Leg) {
			t.Helper()
			if err := db.Tx(f.ctx, func(tx *gorm.DB) error {
				return ledger.Post(tx, &ledger.LedgerTxn{Kind: kind, RentalID: &rentalID, CreatedAt: at}, legs...)
			}); err != nil {
				t.Fatal(err)
			}
		}
		charge := func(rentalID, fen int64, at time.Time) {
			post("charge", rentalID, at, ledger.Leg{Kind: ledger.AccWallet, OrgID: f.org.ID, AmountFen: -fen},
				ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: pid, AmountFen: fen - fen*12/100},
				ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: fen * 12 / 100})
		}
		charge(onDemand.ID, 10000, now)
		charge(term.ID, 5000, now)
		post("rental_refund", term.ID, now, ledger.Leg{Kind: ledger.AccWallet, OrgID: f.org.ID, AmountFen: 5000},
			ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: pid, AmountFen: -4400}, ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: -600})
		post(sla.CreditKind, onDemand.ID, now, ledger.Leg{Kind: ledger.AccWallet, OrgID: f.org.ID, AmountFen: 150},
			ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: pid, AmountFen: -150})
		charge(onDemand.ID, 1000, st.From.Add(-time.Hour).UTC())

		st, err = f.p.Statement(f.ctx, f.owner, pid, "")
		if err != nil {
			t.Fatal(err)
		}
		if st.GrossFen != 10000 || st.CommissionFen != 1200 || st.SLACreditFen != 150 || st.NetFen != 8650 || st.PayableBalanceFen != 9530 {
			t.Errorf("statement: gross %d commission %d sla %d net %d payable %d; want 10000 1200 150 8650 9530",
				st.GrossFen, st.CommissionFen, st.SLACreditFen, st.NetFen, st.PayableBalanceFen)
		}
		if len(st.Lines) != 2 || st.Lines[0].RentalID != onDemand.ID || st.Lines[0].GrossFen != 10000 || st.Lines[0].NetFen != 8800 ||
			st.Lines[0].SLACreditFen != 150 || st.Lines[0].GPUModel != "a100-40g-sxm" || st.Lines[0].GPUs != 2 ||
			st.Lines[1].GrossFen != 0 || st.Lines[1].NetFen != 0 {
			t.Errorf("statement lines: %+v", st.Lines)
		}
		prev, err := f.p.Statement(f.ctx, f.owner, pid, st.From.Add(-time.Hour).In(st.From.Location()).Format("2006-01"))
		if err != nil || prev.GrossFen != 1000 || prev.NetFen != 880 || len(prev.Lines) != 1 {
			t.Errorf("last month's statement: %+v %v", prev, err)
		}
		if _, err := f.p.Statement(f.ctx, f.owner, pid, "2026-13"); fieldsOf(err)["month"] == "" {
			t.Errorf("a bad month: %v", err)
		}
		if _, err := f.p.Statement(f.ctx, f.user, pid, ""); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a renter reading the provider's statement: %v", err)
		}
	})
}

// The node and datacentre lists count each node's GPUs by state and live
// rentals, and each datacentre's latencies and nodes, without mixing
// one's figures into another's.
func TestProviderNodeAndDatacenterLists(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		pid := f.acc.Provider.ID
		busy, tok := f.addNode("gpu-host-1")
		f.report(tok, "dgxa100")
		o := f.mustOffer(f.offerInput(busy.ID, "a100-40g-sxm"))
		f.mustRent(o.ID, 2)
		f.mustRent(o.ID, 1)
		dc2, err := f.p.CreateDatacenter(f.ctx, f.owner, pid, providers.DatacenterInput{NameZH: "二号机房", City: "chongqing",
			Latencies: []providers.DeclaredLatency{{FromCity: "chengdu", RTTms: 9}, {FromCity: "chongqing", RTTms: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		idle, _, err := f.p.AddNode(f.ctx, f.owner, pid, providers.NodeInput{DatacenterID: dc2.ID, Name: "gpu-host-2"})
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := f.p.Nodes(f.ctx, f.owner, pid)
		if err != nil || len(nodes) != 2 {
			t.Fatalf("nodes: %+v %v", nodes, err)
		}
		b, i := nodes[0], nodes[1]
		if b.Node.ID != busy.ID || b.Datacenter.ID != f.dc.ID || b.GPUs != 8 || b.Free != 5 || b.Rented != 3 || b.Unhealthy != 0 || b.LiveRentals != 2 {
			t.Errorf("busy node: %+v, want dc %d, 8 GPUs, 5 free, 3 rented, 2 live rentals", b, f.dc.ID)
		}
		if i.Node.ID != idle.ID || i.Datacenter.ID != dc2.ID || i.GPUs != 0 || i.Free != 0 || i.Rented != 0 || i.LiveRentals != 0 {
			t.Errorf("idle node: %+v, want dc %d and nothing counted", i, dc2.ID)
		}
		dcs, err := f.p.Datacenters(f.ctx, f.owner, pid)
		if err != nil || len(dcs) != 2 {
			t.Fatalf("datacentres: %+v %v", dcs, err)
		}
		cities := func(d providers.DatacenterView) (out []string) {
			for _, l := range d.Latencies {
				out = append(out, l.FromCity)
			}
			return out
		}
		if dcs[0].ID != f.dc.ID || dcs[0].Nodes != 1 || !slices.Equal(cities(dcs[0]), []string{"chengdu"}) {
			t.Errorf("first datacentre: %d nodes, latencies from %v; want 1 and [chengdu]", dcs[0].Nodes, cities(dcs[0]))
		}
		if dcs[1].ID != dc2.ID || dcs[1].Nodes != 1 || !slices.Equal(cities(dcs[1]), []string{"chengdu", "chongqing"}) {
			t.Errorf("second datacentre: %d nodes, latencies from %v; want 1 and [chengdu chongqing]", dcs[1].Nodes, cities(dcs[1]))
		}
	})
}

// Two "Add node" submissions of one name at once (a double click) make
// one node; the other is told the name is taken, never an internal error.
func TestProviderAddNodeTwiceAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		for round := range 5 {
			name := fmt.Sprintf("twin-%d", round)
			errs := make(chan error, 4)
			for range 4 {
				go func() {
					_, _, err := f.p.AddNode(f.ctx, f.owner, f.acc.Provider.ID, providers.NodeInput{DatacenterID: f.dc.ID, Name: name})
					errs <- err
				}()
			}
			made := 0
			for range 4 {
				err := <-errs
				switch {
				case err == nil:
					made++
				case fieldsOf(err)["name"] == "":
					t.Errorf("a second %s: %v, want a message beside the name", name, err)
				}
			}
			if made != 1 {
				t.Errorf("%d nodes named %s made, want 1", made, name)
			}
		}
	})
}

// Datacentres and providers of one name created at once (a double click,
// two sign-ups of one company) each get their own slug: a slug taken by
// a concurrent insert is picked again, never an internal error.
func TestProviderSlugsTakenAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		const racers = 4
		race := func(what string, do func(i int) error) {
			errs := make(chan error, racers)
			for i := range racers {
				go func() { errs <- do(i) }()
			}
			for range racers {
				if err := <-errs; err != nil {
					t.Errorf("%s: %v", what, err)
				}
			}
		}
		for round := range 3 {
			name := fmt.Sprintf("Room %d", round)
			race("datacentre "+name, func(int) error {
				_, err := f.p.CreateDatacenter(f.ctx, f.owner, f.acc.Provider.ID, providers.DatacenterInput{NameZH: name, City: "chengdu"})
				return err
			})
			users := make([]*models.User, racers)
			for i := range users {
				u, err := f.accounts.CreateUser(f.ctx, fmt.Sprintf("ops%d-%d@same.example", round, i), "owner-pass-2026", "Ops", false)
				if err != nil {
					t.Fatal(err)
				}
				users[i] = u
			}
			company := fmt.Sprintf("Same Compute %d", round)
			race("sign-up "+company, func(i int) error {
				prof := goodProfile
				prof.CompanyName = company
				_, err := f.p.SignUp(f.ctx, users[i], prof)
				return err
			})
			var slugs []string
			if err := db.R.Model(&models.Datacenter{}).Where("name_zh = ?", name).Pluck("slug", &slugs).Error; err != nil || len(slugs) != racers {
				t.Errorf("datacentres named %s: slugs %v, %v; want %d", name, slugs, err, racers)
			}
		}
	})
}
