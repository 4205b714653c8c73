package rentals_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/gpu"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
	"suanli/rentals"
)

// together runs fn n times at once and returns the errors.
func together(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// Fifty renters ask for the last free GPU of an offer at once: exactly
// one gets it and the others are told there is none, through the market
// and through the API; the database itself refuses a second live hold.
func TestLastFreeGPUGoesToExactlyOneRenter(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{InsertOnly: true})
		o := r.rtxOffer()
		r.markNodeAlive(o.NodeID)
		var gs []models.GPU
		if err := db.R.Where("node_id = ?", o.NodeID).Order("idx").Find(&gs).Error; err != nil || len(gs) < 2 {
			t.Fatalf("GPUs of node %d: %v", o.NodeID, err)
		}
		onlyFree := func(keep models.GPU) {
			t.Helper()
			for _, g := range gs {
				state := models.GPUBusy
				if g.ID == keep.ID {
					state = models.GPUFree
				}
				if err := db.SetGPUState(r.ctx, g.UUID, state); err != nil {
					t.Fatal(err)
				}
			}
		}
		liveHolds := func(g models.GPU) int64 {
			var n int64
			if err := db.R.Model(&models.RentalGPU{}).Where("gpu_id = ? AND released_at IS NULL", g.ID).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		const n = 50

		// Through the rentals.
		onlyFree(gs[0])
		var won []int64
		var mu sync.Mutex
		errs := together(n, func(int) error {
			rt, err := r.rent(o.ID, 1)
			if err == nil {
				mu.Lock()
				won = append(won, rt.ID)
				mu.Unlock()
			}
			return err
		})
		conflicts := 0
		for _, err := range errs {
			if err == nil {
				continue
			}
			if e, ok := apperr.As(err); ok && e.Code == apperr.EOFFERTAKEN && e.Message == rentals.ErrNoFreeGPUs.Message {
				conflicts++
			} else {
				t.Errorf("a losing rent: %v, want %v", err, rentals.ErrNoFreeGPUs)
			}
		}
		if len(won) != 1 || conflicts != n-1 {
			t.Fatalf("%d rents won and %d were refused, want 1 and %d", len(won), conflicts, n-1)
		}
		if h := liveHolds(gs[0]); h != 1 {
			t.Errorf("GPU %d has %d live holds, want 1", gs[0].ID, h)
		}
		var stored int64
		db.R.Model(&models.Rental{}).Count(&stored)
		if stored != 1 {
			t.Errorf("%d rentals stored, want 1 (refused rents leave nothing)", stored)
		}

		// Through the API, with an API token.
		onlyFree(gs[1])
		token, _, err := r.accounts.CreateAPIToken(r.ctx, r.user, "race")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(map[string]any{"offer_id": o.ID, "gpus": 1, "sla": "standard", "term": "on_demand", "ssh_public_key": sshKey(t)})
		type answer struct {
			status int
			body   []byte
		}
		answers := make([]answer, n)
		errs = together(n, func(i int) error {
			req, _ := http.NewRequest("POST", r.url+"/api/v1/rentals", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(res.Body)
			answers[i] = answer{res.StatusCode, b.Bytes()}
			return nil
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		created, refused := 0, 0
		var apiWinner int64
		for _, a := range answers {
			switch a.status {
			case http.StatusCreated:
				created++
				var got struct {
					ID int64 `json:"id"`
				}
				_ = json.Unmarshal(a.body, &got)
				apiWinner = got.ID
			case http.StatusConflict:
				var e struct {
					Error struct{ Code, Message string } `json:"error"`
				}
				if err := json.Unmarshal(a.body, &e); err != nil || e.Error.Code != apperr.EOFFERTAKEN || e.Error.Message != rentals.ErrNoFreeGPUs.Message {
					t.Errorf("409 body %s, want the no-free-GPUs error", a.body)
				}
				refused++
			default:
				t.Errorf("POST /api/v1/rentals answered %d: %s", a.status, a.body)
			}
		}
		if created != 1 || refused != n-1 {
			t.Fatalf("the API created %d rentals and refused %d, want 1 and %d", created, refused, n-1)
		}
		if h := liveHolds(gs[1]); h != 1 {
			t.Errorf("GPU %d has %d live holds after the API race, want 1", gs[1].ID, h)
		}

		// The database's own rule: no second live hold of a GPU, whatever
		// the code does; a released hold does not count.
		now := r.clock.Now()
		err = db.W.Create(&models.RentalGPU{RentalID: apiWinner, GPUID: gs[0].ID, NodeID: o.NodeID, AttachedAt: now}).Error
		if err == nil || !ledger.IsUniqueViolation(err) {
			t.Errorf("a second live hold of GPU %d: %v, want a unique violation", gs[0].ID, err)
		}
		if err := db.W.Create(&models.RentalGPU{RentalID: apiWinner, GPUID: gs[0].ID, NodeID: o.NodeID, AttachedAt: now, ReleasedAt: &now}).Error; err != nil {
			t.Errorf("a released hold beside a live one: %v", err)
		}
	})
}

// A rental runs once the node's agent has passed the NVML checks on
// exactly its GPUs; stopping waits for the agent, frees the GPUs, and the
// renter pays the 60-second minimum, exactly as priced.
func TestRentalRunsAfterNVMLChecksAndStops(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		o := r.rtxOffer()
		a := r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 2)
		run := r.waitStatus(rt.ID, models.RentalRunning)

		held := r.heldGPUs(rt.ID)
		if len(held) != 2 || held[0].NodeID != o.NodeID || run.NodeID == nil || *run.NodeID != o.NodeID {
			t.Fatalf("held %+v on node %v, want 2 GPUs of node %d", held, run.NodeID, o.NodeID)
		}
		checks := rentals.RentalChecks(&run)
		if checks == nil || checks.NodeID != o.NodeID {
			t.Fatalf("checks %+v, want the node's checks", checks)
		}
		if p, total := checks.Passed(); p != 2*len(gpu.CheckNames()) || total != p {
			t.Errorf("%d of %d checks passed, want %d per GPU, all passed", p, total, len(gpu.CheckNames()))
		}
		for _, g := range held {
			v, ok := checks.Verdicts[g.UUID]
			if !ok || !v.Healthy || len(v.Checks) != len(gpu.CheckNames()) {
				t.Errorf("verdict of held GPU %s: %+v", g.UUID, v)
			}
		}
		if len(checks.Verdicts) != 2 {
			t.Errorf("checks cover %d GPUs, want exactly the 2 rented", len(checks.Verdicts))
		}
		acc := rentals.Access(&run)
		if acc == nil || !acc.Simulated || acc.Port == 0 || !strings.Contains(acc.Command, "ssh") {
			t.Errorf("access %+v, want simulated ssh access", acc)
		}
		if !slices.Contains(a.Launcher.Running(), rt.ID) {
			t.Errorf("the agent runs %v, want rental %d", a.Launcher.Running(), rt.ID)
		}
		var offer models.Offer
		db.R.First(&offer, o.ID)
		if offer.AvailableGPUs != o.AvailableGPUs-2 {
			t.Errorf("offer shows %d free GPUs while 2 are rented, want %d", offer.AvailableGPUs, o.AvailableGPUs-2)
		}

		// Stop: stopping until the agent confirms, then stopped.
		a.Pause()
		st, err := r.rentals.Stop(r.ctx, rt.ID, rentals.StopByUser)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != models.RentalStopping || len(r.heldGPUs(rt.ID)) != 2 {
			t.Errorf("before the agent answers: %s holding %d GPUs, want stopping holding 2", st.Status, len(r.heldGPUs(rt.ID)))
		}
		a.Resume()
		end := r.waitStatus(rt.ID, models.RentalStopped)
		if n := len(r.heldGPUs(rt.ID)); n != 0 {
			t.Errorf("stopped rental holds %d GPUs", n)
		}
		for _, g := range held {
			if s := r.gpu(g.ID).State; s != models.GPUFree {
				t.Errorf("GPU %s is %s after the stop, want free", g.UUID, s)
			}
		}
		if slices.Contains(a.Launcher.Running(), rt.ID) {
			t.Errorf("the agent still runs rental %d", rt.ID)
		}
		db.R.First(&offer, o.ID)
		if offer.AvailableGPUs != o.AvailableGPUs {
			t.Errorf("offer shows %d free GPUs after the stop, want %d", offer.AvailableGPUs, o.AvailableGPUs)
		}

		// Billing: at least the minimum, exactly as priced.
		if end.RunningSince == nil || end.BilledUntil == nil {
			t.Fatalf("billing times missing: %+v", end)
		}
		if d := end.BilledUntil.Sub(*end.RunningSince); d < pricing.MinimumSeconds*time.Second {
			t.Errorf("billed %s, want at least the %d s minimum", d, pricing.MinimumSeconds)
		}
		if end.StoppedAt.Sub(*end.RunningSince) < time.Minute && !end.BilledUntil.Equal(end.RunningSince.Add(time.Minute)) {
			t.Errorf("a rental stopped within its first minute billed until %s, want running_since + 60 s (%s)", end.BilledUntil, end.RunningSince.Add(time.Minute))
		}
		want, _ := pricing.Accrue(rateOf(end), *end.RunningSince, *end.BilledUntil, 0)
		if want <= 0 || end.BilledFen != want {
			t.Errorf("billed %d fen, want %d (Accrue over %s…%s)", end.BilledFen, want, end.RunningSince, end.BilledUntil)
		}
		if s := r.walletSum(rt.ID); s != -want {
			t.Errorf("the wallet paid %d fen for the rental, want %d", -s, want)
		}
		if b := r.balance(); b != r.fund-want {
			t.Errorf("balance %d, want %d", b, r.fund-want)
		}
		var payable int64
		db.R.Model(&ledger.LedgerAccount{}).Where("kind = ? AND org_id = ?", ledger.AccProviderPayable, o.ProviderID).Select("balance_fen").Scan(&payable)
		if payable != want-want*rentals.CommissionPct/100 {
			t.Errorf("the provider earned %d fen of %d, want all but the %d%% commission", payable, want, rentals.CommissionPct)
		}
		r.checkLedger()
	})
}

// A GPU that fails the NVML checks before the renter gets it: the rental
// moves to another node of the same provider, datacentre and model, or,
// with none, fails without a charge, and the GPU is taken off the rentals.
func TestFailedChecksMoveTheRentalOrFailIt(t *testing.T) {
	t.Parallel()
	for _, sibling := range []bool{true, false} {
		name := "no sibling: failed and nothing charged"
		if sibling {
			name = "moves to a sibling node"
		}
		t.Run(name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *models.DB) {
				r := newRig(t, db, rigOptions{})
				o := r.rtxOffer()
				a := r.startAgent(o.NodeID)
				var sib int64
				var b *simNode
				if sibling {
					sib = r.addSibling(o, 4)
					b = r.startAgent(sib)
					r.waitReady(sib)
				}
				r.waitReady(o.NodeID)
				var bad models.GPU
				db.R.Where("node_id = ? AND idx = 0", o.NodeID).First(&bad)
				// The GPU goes bad after the agent's last heartbeat: the
				// market still lists it, only the checks can tell.
				a.Pause()
				if err := a.Sim.Inject(gpu.Fault{Kind: gpu.FaultECC, GPU: 0}); err != nil {
					t.Fatal(err)
				}
				rt := r.mustRent(o.ID, 1)
				if h := r.heldGPUs(rt.ID); len(h) != 1 || h[0].ID != bad.ID {
					t.Fatalf("the rental took %+v, want GPU 0 of node %d", h, o.NodeID)
				}
				a.Resume()

				if sibling {
					run := r.waitStatus(rt.ID, models.RentalRunning)
					if run.NodeID == nil || *run.NodeID != sib || run.Attempts != 2 {
						t.Errorf("running on node %v after %d attempts, want node %d after 2", run.NodeID, run.Attempts, sib)
					}
					if c := rentals.RentalChecks(&run); c == nil || c.NodeID != sib {
						t.Errorf("checks %+v, want those of node %d", c, sib)
					}
					if !slices.Contains(b.Launcher.Running(), rt.ID) {
						t.Errorf("the sibling's agent runs %v, want rental %d", b.Launcher.Running(), rt.ID)
					}
					ev := r.event(rt.ID, "node_failed")
					if !strings.Contains(ev.Detail, bad.UUID) || !strings.Contains(ev.Detail, "ECC") {
						t.Errorf("node_failed event %q does not name the GPU and the ECC errors", ev.Detail)
					}
				} else {
					f := r.waitStatus(rt.ID, models.RentalFailed)
					for _, want := range []string{"NVML checks failed", bad.UUID, "ECC", "nothing was charged"} {
						if !strings.Contains(f.Failure, want) {
							t.Errorf("failure %q does not say %q", f.Failure, want)
						}
					}
					if ts := r.txns(rt.ID); len(ts) != 0 {
						t.Errorf("a failed rental has %d ledger transactions, want none", len(ts))
					}
					if b := r.balance(); b != r.fund {
						t.Errorf("balance %d after a failed rental, want %d", b, r.fund)
					}
					var offer models.Offer
					db.R.First(&offer, o.ID)
					if offer.AvailableGPUs != o.AvailableGPUs-1 {
						t.Errorf("offer shows %d free GPUs, want %d (the failing GPU off the market)", offer.AvailableGPUs, o.AvailableGPUs-1)
					}
				}
				if len(a.Launcher.Running()) != 0 {
					t.Errorf("the failing node launched %v", a.Launcher.Running())
				}
				if g := r.gpu(bad.ID); g.State != models.GPUUnhealthy || g.Health != models.GPUFailing || !strings.Contains(g.Reasons, "ECC") {
					t.Errorf("failing GPU is %s/%s (%q), want unhealthy/failing for its ECC errors", g.State, g.Health, g.Reasons)
				}
				var open int64
				db.R.Model(&models.Incident{}).Where("gpu_id = ? AND kind = ? AND closed_at IS NULL", bad.ID, models.IncidentGPUFailing).Count(&open)
				if open != 1 {
					t.Errorf("%d open incidents for the failing GPU, want 1", open)
				}
				var others int64
				db.R.Model(&models.GPU{}).Where("node_id = ? AND id <> ? AND state <> ?", o.NodeID, bad.ID, models.GPUFree).Count(&others)
				if others != 0 {
					t.Errorf("%d healthy GPUs of the failing node are not free again", others)
				}
				r.checkLedger()
			})
		})
	}
}

// A node whose agent never answers the checks: the rental fails once the
// verify timeout passes, and costs nothing.
func TestRentalFailsWhenTheAgentNeverAnswers(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{VerifyTimeout: time.Second})
		o := r.rtxOffer()
		r.markNodeAlive(o.NodeID) // a recent heartbeat, but nobody listening
		rt := r.mustRent(o.ID, 1)
		f := r.waitStatus(rt.ID, models.RentalFailed)
		if !strings.Contains(f.Failure, "did not answer") || !strings.Contains(f.Failure, "nothing was charged") {
			t.Errorf("failure %q, want the unanswered checks named", f.Failure)
		}
		if ts := r.txns(rt.ID); len(ts) != 0 {
			t.Errorf("%d ledger transactions for a rental that never ran", len(ts))
		}
		if n := len(r.heldGPUs(rt.ID)); n != 0 {
			t.Errorf("a failed rental holds %d GPUs", n)
		}
		var busy int64
		db.R.Model(&models.GPU{}).Where("node_id = ? AND state <> ?", o.NodeID, models.GPUFree).Count(&busy)
		if busy != 0 {
			t.Errorf("%d GPUs not free after the failed rental", busy)
		}
		if b := r.balance(); b != r.fund {
			t.Errorf("balance %d, want %d", b, r.fund)
		}
	})
}

// An agent slower than one provisioning step (but within the verify
// timeout) still gets the rental running: a step that runs out of time
// must leave the rental to a later step, not drop it.
func TestSlowAgentStillGetsTheRentalRunning(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{StepWait: 300 * time.Millisecond, VerifyTimeout: 5 * time.Minute})
		o := r.rtxOffer()
		a := r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		a.Pause()
		rt := r.mustRent(o.ID, 1)
		r.eventually("the verify task is queued", func() bool {
			var n int64
			db.R.Model(&models.AgentTask{}).Where("rental_id = ? AND kind = ?", rt.ID, agent.TaskVerify).Count(&n)
			return n == 1
		})
		// The agent takes several steps' time to answer: five steps have
		// run out of time waiting for it (each snoozed its job) first.
		r.eventually("five provisioning steps to run out of time", func() bool { return r.provisionSnoozes(rt.ID) >= 5 })
		a.Resume()
		r.waitStatus(rt.ID, models.RentalRunning)
	})
}

// A GPU that fails while rented (XID 79, off the bus) or a node that goes
// silent: the rental migrates to a healthy node of the same offer group,
// the incident is on its timeline, its downtime is recorded and not
// billed. A failure within 10 minutes of the start makes it free.
func TestFaultsMoveARunningRentalAndDowntimeIsNotBilled(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		fault string
		after time.Duration
		free  bool
	}{
		{"xid 79 after 20 minutes", "xid:79@0", 20 * time.Minute, false},
		{"off the bus after 20 minutes", "offbus@0", 20 * time.Minute, false},
		{"silent node after 20 minutes", "silent", 20 * time.Minute, false},
		{"xid 79 after 2 minutes is free", "xid:79@0", 2 * time.Minute, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *models.DB) {
				r := newRig(t, db, rigOptions{VerifyTimeout: 10 * time.Minute, LaunchTimeout: 10 * time.Minute, SilentAfter: 10 * time.Second})
				o := r.rtxOffer()
				sib := r.addSibling(o, 4)
				a, b := r.startAgent(o.NodeID), r.startAgent(sib)
				r.waitReady(o.NodeID, sib)
				rt := r.mustRent(o.ID, 1)
				run := r.waitStatus(rt.ID, models.RentalRunning)
				if *run.NodeID != o.NodeID {
					t.Fatalf("running on node %d, want the offer's node %d", *run.NodeID, o.NodeID)
				}
				held := r.heldGPUs(rt.ID)[0]
				r.quiet()
				fault, err := gpu.ParseFault(tc.fault)
				if err != nil {
					t.Fatal(err)
				}

				jump := r.clock.Advance(tc.after)
				var charged int
				if tc.free {
					// Some use is billed before the failure, to be refunded.
					if _, err := r.rentals.Meter(r.ctx); err != nil {
						t.Fatal(err)
					}
					if r.walletSum(rt.ID) >= 0 {
						t.Fatal("nothing billed before the failure")
					}
					charged = len(r.txns(rt.ID))
				}
				if err := a.Sim.Inject(fault); err != nil {
					t.Fatal(err)
				}
				// The health pass runs once the healthy node has been heard
				// from since the clock moved (and the failing GPU reported).
				r.waitHeartbeat(sib, jump)
				if fault.Kind != gpu.FaultSilent {
					r.eventually("the agent reports the GPU failing", func() bool {
						h := r.gpu(held.ID).Health
						return h == models.GPUFailing || h == models.GPUMissing
					})
				}
				b.Pause() // the move waits for the healthy node until the clock has moved on
				res, err := r.rentals.Watch(r.ctx)
				if err != nil {
					t.Fatal(err)
				}
				if res.Migrated != 1 || (fault.Kind == gpu.FaultSilent) != (res.Silenced == 1) {
					t.Errorf("health pass %+v, want one rental migrated (and the silent node marked)", res)
				}
				mig := r.rental(rt.ID)
				if mig.Status != models.RentalMigrating || mig.Free != tc.free {
					t.Errorf("after the health pass: %s, free %v; want migrating, free %v", mig.Status, mig.Free, tc.free)
				}
				inc := r.event(rt.ID, "incident")
				if inc.IncidentID == nil {
					t.Errorf("incident event %q links no incident", inc.Detail)
				} else {
					var i models.Incident
					if err := db.R.First(&i, *inc.IncidentID).Error; err != nil || i.NodeID != o.NodeID {
						t.Errorf("incident %+v (%v), want one on node %d", i, err, o.NodeID)
					}
				}
				if tc.free && !strings.Contains(inc.Detail, "free") {
					t.Errorf("incident %q does not say the rental is free", inc.Detail)
				}
				r.clock.Advance(30 * time.Second)
				b.Resume()

				back := r.waitStatus(rt.ID, models.RentalRunning)
				if back.NodeID == nil || *back.NodeID != sib {
					t.Errorf("resumed on node %v, want the sibling %d", back.NodeID, sib)
				}
				if back.DowntimeSecs < 30 || back.DownSince != nil {
					t.Errorf("downtime %d s (down since %v), want at least 30 s, closed", back.DowntimeSecs, back.DownSince)
				}
				if !slices.Contains(b.Launcher.Running(), rt.ID) {
					t.Errorf("the sibling runs %v, want rental %d", b.Launcher.Running(), rt.ID)
				}
				r.clock.Advance(5 * time.Minute)
				if _, err := r.rentals.Meter(r.ctx); err != nil {
					t.Fatal(err)
				}
				if tc.free {
					if s := r.walletSum(rt.ID); s != 0 {
						t.Errorf("a free rental's charges and refunds sum to %d fen, want 0", s)
					}
					ts := r.txns(rt.ID)
					refunds := 0
					for i, tx := range ts {
						if tx.Kind == "rental_refund" {
							refunds++
							if i != len(ts)-1 {
								t.Errorf("a free rental was charged again after its refund: %+v", ts[i+1:])
							}
						}
					}
					if refunds != 1 || len(ts) <= charged {
						t.Errorf("%d ledger transactions with %d refunds, want the charges then one refund", len(ts), refunds)
					}
				}
				end := r.stop(rt.ID)
				m, back2 := inc.At, r.event(rt.ID, "migrated").At
				if want := int64(back2.Sub(m) / time.Second); end.DowntimeSecs != want {
					t.Errorf("downtime %d s, want %d (incident %s, back %s)", end.DowntimeSecs, want, m, back2)
				}
				if tc.free {
					if s := r.walletSum(rt.ID); s != 0 {
						t.Errorf("a free rental cost the wallet %d fen", -s)
					}
					var all []struct {
						AccountID int64
						Sum       int64
					}
					db.R.Raw(`SELECT e.account_id, SUM(e.amount_fen) AS sum FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
						WHERE t.rental_id = ? GROUP BY e.account_id`, rt.ID).Scan(&all)
					for _, s := range all {
						if s.Sum != 0 {
							t.Errorf("account %d kept %d fen of a free rental", s.AccountID, s.Sum)
						}
					}
					if b := r.balance(); b != r.fund {
						t.Errorf("balance %d after a free rental, want %d", b, r.fund)
					}
					if end.BilledFen != 0 {
						t.Errorf("a free rental shows billed_fen %d, want 0 (everything was refunded)", end.BilledFen)
					}
					if d, err := r.rentals.Detail(r.ctx, rt.ID); err != nil || d.CostFen != 0 {
						t.Errorf("a free rental's page shows a cost of %d fen (%v), want 0", d.CostFen, err)
					}
				} else {
					rate := rateOf(end)
					before, carry := pricing.Accrue(rate, *end.RunningSince, m, 0)
					after, _ := pricing.Accrue(rate, back2, *end.BilledUntil, carry)
					whole, _ := pricing.Accrue(rate, *end.RunningSince, *end.BilledUntil, 0)
					if end.Free || end.BilledFen != before+after {
						t.Errorf("billed %d fen (free %v), want %d + %d for the running time only", end.BilledFen, end.Free, before, after)
					}
					if s := r.walletSum(rt.ID); s != -(before + after) {
						t.Errorf("the wallet paid %d fen, want %d", -s, before+after)
					}
					if before+after >= whole {
						t.Errorf("billed %d fen, no less than the %d fen of the whole interval with its downtime", before+after, whole)
					}
				}
				r.checkLedger()
			})
		})
	}
}

// A rental stopped while it migrates: its downtime up to the stop is
// recorded, as when a move finds no node.
func TestStoppingAMigratingRentalRecordsItsDowntime(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{VerifyTimeout: 10 * time.Minute, SilentAfter: time.Hour})
		o := r.rtxOffer()
		sib := r.addSibling(o, 4)
		a, b := r.startAgent(o.NodeID), r.startAgent(sib)
		r.waitReady(o.NodeID, sib)
		rt := r.mustRent(o.ID, 1)
		r.waitStatus(rt.ID, models.RentalRunning)
		held := r.heldGPUs(rt.ID)[0]
		r.quiet()
		a.Pause()
		b.Pause()
		// The agent's last verdict failed the GPU (what a heartbeat records).
		if err := db.W.Model(&models.GPU{}).Where("id = ?", held.ID).
			Updates(map[string]any{"health": models.GPUFailing, "reasons": "XID 79 (GPU has fallen off the bus)"}).Error; err != nil {
			t.Fatal(err)
		}
		if res, err := r.rentals.Watch(r.ctx); err != nil || res.Migrated != 1 {
			t.Fatalf("health pass %+v %v, want one migration", res, err)
		}
		r.clock.Advance(45 * time.Second)
		if _, err := r.rentals.Stop(r.ctx, rt.ID, rentals.StopByUser); err != nil {
			t.Fatal(err)
		}
		a.Resume()
		b.Resume()
		end := r.waitStatus(rt.ID, models.RentalStopped)
		if end.DownSince != nil || end.DowntimeSecs < 45 {
			t.Errorf("stopped while migrating: downtime %d s, down since %v; want at least 45 s, closed", end.DowntimeSecs, end.DownSince)
		}
	})
}

// A million one-second meter steps post exactly what one step over the
// whole interval posts, across off-peak boundaries and weekends, with
// every discount and the SLA surcharge; the quote agrees within a fen.
func TestSubFenCarryIsExact(t *testing.T) {
	t.Parallel()
	rate := pricing.Rate{PricePerGPUHourFen: 3400, GPUs: 3, OffpeakPct: 20, StudentPct: 10, SLASurchargePct: 15}
	start := time.Date(2026, 12, 11, 21, 59, 30, 0, pricing.Shanghai) // a Friday, 30 s before off-peak
	const steps = 1_000_000
	var sum, carry int64
	at := start
	for range steps {
		next := at.Add(time.Second)
		fen, c := pricing.Accrue(rate, at, next, carry)
		sum, carry, at = sum+fen, c, next
	}
	whole, wholeCarry := pricing.Accrue(rate, start, at, 0)
	if sum != whole || carry != wholeCarry {
		t.Errorf("a million steps posted %d fen carrying %d, one step %d carrying %d", sum, carry, whole, wholeCarry)
	}
	q, err := pricing.Quote(pricing.Terms{PricePerGPUHourFen: 3400, OffpeakDiscountPct: 20, StudentDiscountPct: 10},
		pricing.Request{GPUs: 3, Start: start, Seconds: steps, Term: pricing.OnDemand, SLA: "premium"}, pricing.Buyer{Student: true})
	if err != nil {
		t.Fatal(err)
	}
	if q.PeakSeconds == 0 || q.OffpeakSeconds == 0 {
		t.Fatalf("the interval does not cross off-peak boundaries: %+v", q)
	}
	if d := q.TotalFen - sum; d < -1 || d > 1 {
		t.Errorf("metered %d fen, quoted %d: more than a fen apart", sum, q.TotalFen)
	}
}

// Two thousand meter passes one second apart bill a running rental
// exactly what the whole interval costs.
func TestMeterPassesOneSecondApartBillTheWholeInterval(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		o := r.rtxOffer()
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 3, func(in *rentals.RentInput) { in.SLA = "premium" })
		run := r.waitStatus(rt.ID, models.RentalRunning)
		r.quiet()
		r.clock.Freeze()
		from := *run.BilledUntil
		const passes = 2000
		for range passes {
			r.clock.Advance(time.Second)
			if _, err := r.rentals.Meter(r.ctx); err != nil {
				t.Fatal(err)
			}
		}
		end := r.rental(rt.ID)
		want, carry := pricing.Accrue(rateOf(end), from, *end.BilledUntil, 0)
		if got := end.BilledUntil.Sub(from.Truncate(time.Second)); got < (passes-1)*time.Second {
			t.Fatalf("billed %s of %d passes", got, passes)
		}
		if end.BilledFen != want || end.CarryNum != carry {
			t.Errorf("billed %d fen carrying %d, want %d carrying %d", end.BilledFen, end.CarryNum, want, carry)
		}
		if s := r.walletSum(rt.ID); s != -want {
			t.Errorf("the wallet paid %d fen, want %d", -s, want)
		}
		if n := len(r.txns(rt.ID)); n < 100 {
			t.Errorf("only %d charges posted over %d passes: the sub-fen carry was not exercised", n, passes)
		}
		r.checkLedger()
	})
}

// credit adds promotional credit to the renter's wallet.
func (r *rig) credit(fen int64) {
	r.t.Helper()
	if err := r.db.Tx(r.ctx, func(tx *gorm.DB) error {
		return billing.CreditPromo(tx, r.org.ID, fen, "promo_credit", "test funds", nil, nil, r.clock.Now())
	}); err != nil {
		r.t.Fatal(err)
	}
}

// hourFen is what an hour of one GPU of the offer costs now.
func (r *rig) hourFen(o models.Offer, gpus int) int64 {
	return pricing.HourFen(pricing.Rate{PricePerGPUHourFen: o.PricePerGPUHourFen, GPUs: gpus, OffpeakPct: o.OffpeakDiscountPct}, r.clock.Now())
}

// The wallet and spending limits: starting needs an hour of balance; the
// meter takes what is left and stops the rental, never going below zero;
// the renter is mailed once at less than an hour left; a member's cap
// stops the rental.
func TestBalanceAndLimitsStopRentals(t *testing.T) {
	t.Parallel()
	t.Run("starting needs an hour of balance", func(t *testing.T) {
		dbtest.Each(t, func(t *testing.T, db *models.DB) {
			r := newRig(t, db, rigOptions{FundFen: 1, InsertOnly: true})
			o := r.rtxOffer()
			r.markNodeAlive(o.NodeID)
			hour := r.hourFen(o, 1)
			r.credit(hour - 2)
			_, err := r.rent(o.ID, 1)
			if e, ok := apperr.As(err); !ok || e.Code != apperr.EINSUFFICIENTFUNDS || e.Field != "balance" {
				t.Fatalf("renting with %d fen for an hour of %d: %v, want insufficient_funds on the balance", hour-1, hour, err)
			}
			var rentals, holds, busy int64
			db.R.Model(&models.Rental{}).Count(&rentals)
			db.R.Model(&models.RentalGPU{}).Count(&holds)
			db.R.Model(&models.GPU{}).Where("node_id = ? AND state <> ?", o.NodeID, models.GPUFree).Count(&busy)
			if rentals != 0 || holds != 0 || busy != 0 {
				t.Errorf("a refused rent left %d rentals, %d holds, %d busy GPUs", rentals, holds, busy)
			}
			r.credit(1)
			if _, err := r.rent(o.ID, 1); err != nil {
				t.Errorf("renting with exactly an hour of balance: %v", err)
			}
		})
	})
	t.Run("the meter takes what is left and stops the rental", func(t *testing.T) {
		dbtest.Each(t, func(t *testing.T, db *models.DB) {
			r := newRig(t, db, rigOptions{FundFen: 1})
			o := r.rtxOffer()
			r.startAgent(o.NodeID)
			r.waitReady(o.NodeID)
			fund := r.hourFen(o, 1) + 80
			r.credit(fund - 1)
			rt := r.mustRent(o.ID, 1)
			r.waitStatus(rt.ID, models.RentalRunning)
			r.quiet()
			r.clock.Advance(2 * time.Hour)
			res, err := r.rentals.Meter(r.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stopped != 1 {
				t.Errorf("meter pass %+v, want the rental stopped", res)
			}
			end := r.waitStatus(rt.ID, models.RentalStopped)
			if end.StopReason != rentals.StopBalance {
				t.Errorf("stop reason %q, want %q", end.StopReason, rentals.StopBalance)
			}
			if b := r.balance(); b != 0 {
				t.Errorf("balance %d after exhausting it, want 0", b)
			}
			if end.BilledFen != fund || r.walletSum(rt.ID) != -fund {
				t.Errorf("billed %d fen, wallet paid %d; want all %d that was left", end.BilledFen, -r.walletSum(rt.ID), fund)
			}
			if n := r.emptyTxns(rt.ID); n != 0 {
				t.Errorf("%d ledger transactions of the rental move no money (a refused charge left its transaction row)", n)
			}
			r.clock.Advance(time.Hour)
			if _, err := r.rentals.Meter(r.ctx); err != nil {
				t.Fatal(err)
			}
			if after := r.rental(rt.ID); after.BilledFen != end.BilledFen {
				t.Errorf("a stopped rental was billed %d fen more", after.BilledFen-end.BilledFen)
			}
			r.checkLedger()
		})
	})
	t.Run("less than an hour left is mailed once", func(t *testing.T) {
		dbtest.Each(t, func(t *testing.T, db *models.DB) {
			r := newRig(t, db, rigOptions{FundFen: 1})
			o := r.rtxOffer()
			r.startAgent(o.NodeID)
			r.waitReady(o.NodeID)
			r.credit(r.hourFen(o, 1) + 10 - 1)
			rt := r.mustRent(o.ID, 1)
			r.waitStatus(rt.ID, models.RentalRunning)
			mails := func() int {
				ms, err := db.Outbox(r.ctx, r.user.Email, 100)
				if err != nil {
					t.Fatal(err)
				}
				return len(ms)
			}
			r.quiet()
			before := mails()
			reminded := 0
			for range 3 {
				r.clock.Advance(5 * time.Minute)
				res, err := r.rentals.Meter(r.ctx)
				if err != nil {
					t.Fatal(err)
				}
				reminded += res.Reminded
			}
			if got := mails() - before; got != 1 || reminded != 1 {
				t.Errorf("%d low-balance mails queued (%d reminders counted), want 1", got, reminded)
			}
			if ms, _ := db.Outbox(r.ctx, r.user.Email, 1); len(ms) == 1 && !strings.Contains(ms[0].Body, fmt.Sprint(rt.ID)) {
				t.Errorf("low-balance mail %q does not name rental %d", ms[0].Body, rt.ID)
			}
			if s := r.rental(rt.ID).Status; s != models.RentalRunning {
				t.Errorf("rental %s with balance left, want running", s)
			}
		})
	})
	t.Run("a member's cap stops the rental", func(t *testing.T) {
		dbtest.Each(t, func(t *testing.T, db *models.DB) {
			r := newRig(t, db, rigOptions{})
			o := r.rtxOffer()
			r.startAgent(o.NodeID)
			r.waitReady(o.NodeID)
			capFen := r.hourFen(o, 1) * 3 / 2
			if err := db.W.Model(&models.Org{}).Where("id = ?", r.org.ID).Update("member_cap_fen", capFen).Error; err != nil {
				t.Fatal(err)
			}
			r.org.MemberCapFen = &capFen
			rt := r.mustRent(o.ID, 1)
			r.waitStatus(rt.ID, models.RentalRunning)
			r.quiet()
			r.clock.Advance(2 * time.Hour)
			if _, err := r.rentals.Meter(r.ctx); err != nil {
				t.Fatal(err)
			}
			end := r.waitStatus(rt.ID, models.RentalStopped)
			if end.StopReason != rentals.StopSpendCap {
				t.Errorf("stop reason %q, want %q", end.StopReason, rentals.StopSpendCap)
			}
			if spent := -r.walletSum(rt.ID); spent > capFen {
				t.Errorf("the member spent %d fen against a cap of %d: the meter charged past the cap", spent, capFen)
			}
			r.checkLedger()
		})
	})
}

// A week's term is paid up front once running and never metered; stopped
// early it keeps its GPUs to the term's end; with auto-renew it renews
// once per term; a term that never runs costs nothing.
func TestTermRentals(t *testing.T) {
	t.Parallel()
	week := func(renew bool) func(*rentals.RentInput) {
		return func(in *rentals.RentInput) { in.Term, in.AutoRenew = pricing.Week, renew }
	}
	t.Run("paid up front, renewed, held to the end", func(t *testing.T) {
		dbtest.Each(t, func(t *testing.T, db *models.DB) {
			// Agents are not heard from across the week the clock jumps.
			r := newRig(t, db, rigOptions{SilentAfter: 365 * 24 * time.Hour})
			o := r.rtxOffer()
			r.startAgent(o.NodeID)
			r.waitReady(o.NodeID)
			q, err := pricing.Quote(pricing.Terms{PricePerGPUHourFen: o.PricePerGPUHourFen, WeeklyPricePerGPUFen: o.WeeklyPricePerGPUFen,
				MonthlyPricePerGPUFen: o.MonthlyPricePerGPUFen, OffpeakDiscountPct: o.OffpeakDiscountPct, StudentDiscountPct: o.StudentDiscountPct},
				pricing.Request{GPUs: 1, Start: r.clock.Now(), Term: pricing.Week}, pricing.Buyer{})
			if err != nil {
				t.Fatal(err)
			}
			price := q.TotalFen
			renewing := r.mustRent(o.ID, 1, week(true))
			ending := r.mustRent(o.ID, 1, week(false))
			run := r.waitStatus(renewing.ID, models.RentalRunning)
			r.waitStatus(ending.ID, models.RentalRunning)
			for _, id := range []int64{renewing.ID, ending.ID} {
				ts := r.txns(id)
				if len(ts) != 1 || ts[0].Kind != billing.ChargeKind || r.walletSum(id) != -price {
					t.Errorf("rental %d: %d transactions charging %d fen, want one charge of the term's %d", id, len(ts), -r.walletSum(id), price)
				}
			}
			if run.EndsAt == nil || run.EndsAt.Sub(run.RunningSince.AddDate(0, 0, 7)).Abs() >= time.Second || run.BilledFen != price {
				t.Errorf("ends %v (running since %v), billed %d; want a week on, %d", run.EndsAt, run.RunningSince, run.BilledFen, price)
			}
			r.quiet()
			r.clock.Advance(time.Hour)
			if _, err := r.rentals.Meter(r.ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(r.charges(renewing.ID)); n != 1 {
				t.Errorf("a meter pass charged a term rental: %d transactions", n)
			}

			// The term ends: one renews, the other stops and lets go.
			end1, end2 := *run.EndsAt, *r.rental(ending.ID).EndsAt
			r.clock.Set(later(end1, end2).Add(time.Second))
			res, err := r.rentals.Watch(r.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.Renewed != 1 {
				t.Errorf("health pass %+v, want one renewal", res)
			}
			renewed := r.rental(renewing.ID)
			if renewed.Status != models.RentalRunning || !renewed.EndsAt.Equal(end1.AddDate(0, 0, 7)) || len(r.charges(renewing.ID)) != 2 || r.walletSum(renewing.ID) != -2*price {
				t.Errorf("renewed: %s until %v with %d transactions (%d fen); want running a week longer, two charges", renewed.Status,
					renewed.EndsAt, len(r.charges(renewing.ID)), -r.walletSum(renewing.ID))
			}
			over := r.waitStatus(ending.ID, models.RentalStopped)
			if len(r.heldGPUs(ending.ID)) != 0 || over.StopReason != "term ended" {
				t.Errorf("an ended term holds %d GPUs (stop reason %q)", len(r.heldGPUs(ending.ID)), over.StopReason)
			}
			if _, err := r.rentals.Watch(r.ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(r.charges(renewing.ID)); n != 2 {
				t.Errorf("a second health pass renewed again: %d transactions", n)
			}

			// Stopped early: the GPUs stay held until the (renewed) end.
			held := r.heldGPUs(renewing.ID)
			stopped := r.stop(renewing.ID)
			if h := r.heldGPUs(renewing.ID); len(h) != 1 || r.gpu(held[0].ID).State != models.GPUBusy {
				t.Errorf("a term stopped early holds %d GPUs, want its GPU until %v", len(h), stopped.EndsAt)
			}
			r.clock.Set(stopped.EndsAt.Add(time.Second))
			if _, err := r.rentals.Watch(r.ctx); err != nil {
				t.Fatal(err)
			}
			if h := r.heldGPUs(renewing.ID); len(h) != 0 || r.gpu(held[0].ID).State != models.GPUFree {
				t.Errorf("at the term's end the rental still holds %d GPUs", len(h))
			}
			if n := len(r.charges(renewing.ID)); n != 2 {
				t.Errorf("%d transactions after the term ended, want the 2 charges", n)
			}
			r.checkLedger()
		})
	})
	t.Run("checks fail: nothing charged", func(t *testing.T) {
		dbtest.Each(t, func(t *testing.T, db *models.DB) {
			r := newRig(t, db, rigOptions{})
			o := r.rtxOffer()
			a := r.startAgent(o.NodeID)
			r.waitReady(o.NodeID)
			a.Pause()
			if err := a.Sim.Inject(gpu.Fault{Kind: gpu.FaultECC, GPU: 0}); err != nil {
				t.Fatal(err)
			}
			rt := r.mustRent(o.ID, 1, week(true))
			a.Resume()
			r.waitStatus(rt.ID, models.RentalFailed)
			if ts := r.txns(rt.ID); len(ts) != 0 || r.balance() != r.fund {
				t.Errorf("a term that never ran has %d transactions, balance %d of %d", len(ts), r.balance(), r.fund)
			}
		})
	})
	t.Run("balance gone before it runs: nothing charged", func(t *testing.T) {
		dbtest.Each(t, func(t *testing.T, db *models.DB) {
			r := newRig(t, db, rigOptions{})
			o := r.rtxOffer()
			a := r.startAgent(o.NodeID)
			r.waitReady(o.NodeID)
			a.Pause()
			rt := r.mustRent(o.ID, 1, week(false))
			// The wallet is emptied while the checks run.
			bal := r.balance()
			if err := db.Tx(r.ctx, func(tx *gorm.DB) error {
				return ledger.Post(tx, &ledger.LedgerTxn{Kind: "promo_credit", Memo: "credit withdrawn", CreatedAt: r.clock.Now()},
					ledger.Leg{Kind: ledger.AccWallet, OrgID: r.org.ID, AmountFen: -bal},
					ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: bal})
			}); err != nil {
				t.Fatal(err)
			}
			a.Resume()
			f := r.waitStatus(rt.ID, models.RentalFailed)
			if !strings.Contains(f.Failure, "nothing was charged") {
				t.Errorf("failure %q", f.Failure)
			}
			if ts := r.txns(rt.ID); len(ts) != 0 {
				t.Errorf("a term that never ran has %d ledger transactions (%d without entries), want none", len(ts), r.emptyTxns(rt.ID))
			}
			if h := r.heldGPUs(rt.ID); len(h) != 0 {
				t.Errorf("a failed term holds %d GPUs", len(h))
			}
			r.checkLedger()
		})
	})
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// A node registers once: its one-time token is exchanged for a credential
// the server keeps only hashed; the agent's inventory is stored, and a
// GPU reported failing leaves the rentals.
func TestNodeRegistersOnceAndReportsItsGPUs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{InsertOnly: true})
		o := r.rtxOffer()
		tok, err := r.rentals.Fleet().IssueRegistrationToken(r.ctx, o.NodeID)
		if err != nil {
			t.Fatal(err)
		}
		var uuids []string
		db.R.Model(&models.GPU{}).Where("node_id = ?", o.NodeID).Order("idx").Pluck("uuid", &uuids)
		sim, err := gpu.SimulateCatalog(o.GPUModel, len(uuids), gpu.WithUUIDs(uuids))
		if err != nil {
			t.Fatal(err)
		}
		reader, err := gpu.Open(sim, gpu.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		host := reader.Read()
		hb := agent.Heartbeat{AgentVersion: "test", Hostname: "node-a", Launcher: "simulated", Host: host}
		reply, err := r.rentals.Fleet().Heartbeat(r.ctx, tok, hb)
		if err != nil || reply.Credential == "" || reply.NodeID != o.NodeID {
			t.Fatalf("registration: %+v %v", reply, err)
		}
		cred := reply.Credential
		var n models.Node
		db.R.First(&n, o.NodeID)
		if n.RegTokenHash != nil || n.CredHash == nil || *n.CredHash != sha256Hex(cred) {
			t.Errorf("node keeps registration hash %v and credential hash %v, want none and the credential's SHA-256", n.RegTokenHash, n.CredHash)
		}
		row, _ := json.Marshal(n)
		if strings.Contains(string(row), cred) || strings.Contains(string(row), tok) {
			t.Errorf("the node row holds a plaintext token: %s", row)
		}
		if _, err := r.rentals.Fleet().Heartbeat(r.ctx, tok, hb); apperr.Code(err) != apperr.EUNAUTHORIZED {
			t.Errorf("the registration token used again: %v, want unauthorized", err)
		}
		if reply, err := r.rentals.Fleet().Heartbeat(r.ctx, cred, hb); err != nil || reply.Credential != "" {
			t.Errorf("a heartbeat with the credential: %+v %v", reply, err)
		}
		var gs []models.GPU
		db.R.Where("node_id = ?", o.NodeID).Order("idx").Find(&gs)
		if len(gs) != len(host.GPUs) {
			t.Fatalf("%d GPUs stored, the agent reported %d", len(gs), len(host.GPUs))
		}
		for i, info := range host.GPUs {
			g := gs[i]
			if g.Name != info.Name || g.Name == "" || g.PCIBusID != info.PCIBusID || g.PCIBusID == "" || g.MemoryMiB != int64(info.MemoryTotalMiB) ||
				g.MemoryMiB == 0 || g.Health != models.GPUHealthy || g.State != models.GPUFree {
				t.Errorf("GPU %d stored as %q %q %d MiB %s/%s; the agent reported %q %q %d MiB", i, g.Name, g.PCIBusID, g.MemoryMiB, g.Health, g.State,
					info.Name, info.PCIBusID, info.MemoryTotalMiB)
			}
		}
		var before models.Offer
		db.R.First(&before, o.ID)

		// A GPU reported failing is taken off the market at once.
		if err := sim.Inject(gpu.Fault{Kind: gpu.FaultECC, GPU: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.rentals.Fleet().Heartbeat(r.ctx, cred, agent.Heartbeat{AgentVersion: "test", Host: reader.Read()}); err != nil {
			t.Fatal(err)
		}
		g := r.gpu(gs[1].ID)
		if g.Health != models.GPUFailing || g.State != models.GPUUnhealthy || !strings.Contains(g.Reasons, "ECC") {
			t.Errorf("failing GPU stored as %s/%s (%q)", g.Health, g.State, g.Reasons)
		}
		var after models.Offer
		db.R.First(&after, o.ID)
		if after.AvailableGPUs != before.AvailableGPUs-1 {
			t.Errorf("offer shows %d free GPUs, want %d", after.AvailableGPUs, before.AvailableGPUs-1)
		}

		// A real agent registers over HTTP with its own one-time token;
		// that token is refused afterwards (401).
		other := r.offer("demo-tianfu-compute", "cd-tifc", "rtx-4090")
		tok2, err := r.rentals.Fleet().IssueRegistrationToken(r.ctx, other.NodeID)
		if err != nil {
			t.Fatal(err)
		}
		r.startAgentWith(other.NodeID, tok2)
		r.waitReady(other.NodeID)
		var n2 models.Node
		db.R.First(&n2, other.NodeID)
		if n2.RegTokenHash != nil || n2.CredHash == nil {
			t.Errorf("after the agent registered: registration hash %v, credential hash %v", n2.RegTokenHash, n2.CredHash)
		}
		body, _ := json.Marshal(agent.Heartbeat{AgentVersion: "test"})
		req, _ := http.NewRequest("POST", r.url+agent.PathHeartbeat, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok2)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&e)
		if res.StatusCode != http.StatusUnauthorized || e.Error.Code != apperr.EUNAUTHORIZED {
			t.Errorf("a used registration token over HTTP: %d %+v, want 401 unauthorized", res.StatusCode, e)
		}
	})
}

// A heartbeat that reports another node's GPU UUID is refused with a
// conflict and changes nothing: it is the agent's mistake, not a server error.
func TestHeartbeatWithAnotherNodesGPUIsAConflict(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{InsertOnly: true})
		o := r.rtxOffer()
		var other models.GPU
		if err := db.R.Where("node_id <> ?", o.NodeID).First(&other).Error; err != nil {
			t.Fatal(err)
		}
		cred, err := r.rentals.Fleet().IssueCredential(r.ctx, o.NodeID)
		if err != nil {
			t.Fatal(err)
		}
		hb := agent.Heartbeat{Host: gpu.Host{GPUs: []gpu.Info{{Index: 0, UUID: other.UUID, Name: "NVIDIA GeForce RTX 4090",
			Health: gpu.Verdict{Healthy: true}}}}}
		_, err = r.rentals.Fleet().Heartbeat(r.ctx, cred, hb)
		if apperr.Code(err) != apperr.ECONFLICT {
			t.Fatalf("heartbeat with another node's GPU: %v, want a conflict", err)
		}
		var n models.Node
		if err := db.R.First(&n, o.NodeID).Error; err != nil {
			t.Fatal(err)
		}
		if n.LastHeartbeatAt != nil {
			t.Errorf("the refused heartbeat was recorded at %v", n.LastHeartbeatAt)
		}
	})
}
