package fleet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/catalog"
	"suanli/gpu"
	"suanli/images"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/supply"
	"suanli/offers"
	"suanli/reqlog"
	"suanli/witness"
)

// HeartbeatEvery is how often agents are asked to send heartbeats.
const HeartbeatEvery = 5 * time.Second

// ErrBadNodeToken is a missing, unknown or already used node token.
var ErrBadNodeToken = &apperr.Error{Code: apperr.EUNAUTHORIZED, Message: "unknown or already used node token"}

// ErrSimulatedRefused is the heartbeat of a simulated agent (go-nvml's
// mock servers, `suanli agent --simulate`) from a node of a provider the
// platform does not run simulated: real providers' nodes are never
// accepted as simulated. Only the demo's providers and test providers
// made with `suanli admin create-user … --provider NAME --simulated` are.
var ErrSimulatedRefused = &apperr.Error{Code: apperr.EFORBIDDEN, Key: "trust.err.simulated_refused",
	Message: "this node's provider does not run simulated agents: a simulated agent (--simulate) is accepted only for the demo's and test providers made with `suanli admin create-user … --provider NAME --simulated`; run the agent on the real NVML"}

// HashNodeToken is the hash the server keeps of a node token (SHA-256,
// hex): a leaked database does not hand out working credentials.
func HashNodeToken(t string) string {
	h := sha256.Sum256([]byte(t))
	return hex.EncodeToString(h[:])
}

// The prefixes of a node's one-time registration token and of its
// credential.
const (
	RegTokenPrefix   = "snr_"
	CredentialPrefix = "snc_"
)

// NewNodeToken returns a new random node token with the prefix ("snr_"
// registration, "snc_" credential), which says in logs and support
// requests which kind it is.
func NewNodeToken(prefix string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// IssueRegistrationToken gives a node a new one-time registration token
// (replacing any unused one) and returns it; the server keeps its hash.
func (f *Fleet) IssueRegistrationToken(ctx context.Context, nodeID int64) (string, error) {
	return f.setNodeToken(ctx, nodeID, supply.SetNodeRegTokenHash, RegTokenPrefix)
}

// IssueCredential sets and returns a node credential directly, without a
// registration step: for the agents that serve --demo runs in-process.
func (f *Fleet) IssueCredential(ctx context.Context, nodeID int64) (string, error) {
	return f.setNodeToken(ctx, nodeID, supply.SetNodeCredHash, CredentialPrefix)
}

// setNodeToken stores the hash of a new token with set and returns the
// token.
func (f *Fleet) setNodeToken(ctx context.Context, nodeID int64, set func(ctx context.Context, db *models.DB, nodeID int64, hash string) (bool, error), prefix string) (string, error) {
	tok := NewNodeToken(prefix)
	found, err := set(ctx, f.DB, nodeID, HashNodeToken(tok))
	if err != nil {
		return "", err
	}
	if !found {
		return "", apperr.NotFound("node")
	}
	return tok, nil
}

// NodeByCredential authenticates an agent's bearer credential.
func (f *Fleet) NodeByCredential(ctx context.Context, bearer string) (*models.Node, error) {
	if bearer == "" {
		return nil, ErrBadNodeToken
	}
	n, err := supply.NodeByCredHash(f.DB.R.WithContext(ctx), HashNodeToken(bearer))
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrBadNodeToken
	}
	reqlog.Set(ctx, "node_id", n.ID)
	return &n, err
}

// agentInfo is what the node page shows about its agent.
type agentInfo struct {
	Version       string `json:"version"`
	Hostname      string `json:"hostname"`
	Launcher      string `json:"launcher"`
	Driver        string `json:"driver,omitempty"`
	CUDA          string `json:"cuda,omitempty"`
	NVMLInitError string `json:"nvml_init_error,omitempty"`
	SimModel      string `json:"sim_model,omitempty"`
	PingURL       string `json:"ping_url,omitempty"`
}

// MaxNodeGPUs is the most GPUs one node may report: the largest offer
// (providers.MaxOfferGPUs, the same number) rents them all from one node, and no single host has
// more (eight is usual, sixteen the largest boards). Each reported GPU
// costs a row and, when its verdict changes, an update in the heartbeat's
// transaction, so the bound also bounds what one heartbeat may write.
const MaxNodeGPUs = 64

// checkInventory refuses a report of more GPUs than a node may have, or
// of an index no GPU of such a node can have.
func checkInventory(host gpu.Host) error {
	if n := len(host.GPUs); n > MaxNodeGPUs {
		return apperr.Field("gpus", "heartbeat.err.too_many_gpus", n, MaxNodeGPUs)
	}
	for _, g := range host.GPUs {
		if g.Index < 0 || g.Index >= MaxNodeGPUs {
			return apperr.Field("gpus", "heartbeat.err.gpu_index", g.Index, MaxNodeGPUs-1)
		}
	}
	return nil
}

// Heartbeat records an agent's heartbeat. The bearer is the node
// credential, or on the first heartbeat a one-time registration token,
// which is exchanged for a credential returned in the reply. The GPUs'
// inventory and verdicts are stored; a GPU that fails its checks stops
// being rentable at once (the health watch moves its rentals). A report
// of more than MaxNodeGPUs GPUs is refused (EINVALID) and stores nothing.
func (f *Fleet) Heartbeat(ctx context.Context, bearer string, hb agent.Heartbeat) (agent.HeartbeatReply, error) {
	reply := agent.HeartbeatReply{IntervalSeconds: int(HeartbeatEvery / time.Second)}
	if bearer == "" {
		return reply, ErrBadNodeToken
	}
	if err := checkInventory(hb.Host); err != nil {
		return reply, err
	}
	h := HashNodeToken(bearer)
	now := f.DB.Now().UTC()
	info, _ := json.Marshal(agentInfo{Version: hb.AgentVersion, Hostname: hb.Hostname, Launcher: hb.Launcher,
		Driver: hb.Host.DriverVersion, CUDA: hb.Host.CUDADriverVersion, NVMLInitError: hb.Host.InitError, SimModel: hb.Host.Model, PingURL: hb.PingURL})
	var nodeID int64
	var sampled []int64 // GPUs whose telemetry this heartbeat added to their history
	err := f.DB.Tx(ctx, func(tx *gorm.DB) error {
		sampled = sampled[:0]
		n, err := supply.NodeByCredHash(tx, h)
		if errors.Is(err, gorm.ErrRecordNotFound) {
			n, err = supply.NodeByRegTokenHash(tx, h)
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrBadNodeToken
			}
			if err != nil {
				return err
			}
			// The registration token is used up; the credential replaces it.
			reply.Credential = NewNodeToken("snc_")
			ch := HashNodeToken(reply.Credential)
			if err := supply.ExchangeRegToken(tx, n.ID, ch); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		nodeID = n.ID
		reqlog.Set(ctx, "node_id", n.ID)
		// Simulation is the platform's decision (the provider's flag), not
		// the agent's word: a simulated host of any other provider is
		// refused, at registration (the token stays unused) and after.
		prov, err := supply.ProviderByIDIn(tx, n.ProviderID)
		if err != nil {
			return err
		}
		if hb.Host.Simulated && !prov.Simulated {
			slog.Warn("simulated agent of a real provider refused", "node", n.ID, "provider", prov.ID)
			return ErrSimulatedRefused
		}
		if err := supply.RecordNodeHeartbeat(tx, n.ID, supply.NodeHeartbeat{
			At: now, Health: nodeHealthOf(hb.Host), Simulated: prov.Simulated, AgentInfo: string(info), PingURL: offers.CleanPingURL(hb.PingURL),
			VolumeRoot: cleanVolumeRoot(hb.VolumeRoot), CUDADriverVersion: cleanShort(hb.Host.CUDADriverVersion, 32),
		}); err != nil {
			return err
		}
		// The image list is written only when it changed: heartbeats
		// arrive every few seconds and the list rarely does.
		if imgs, hash := nodeImagesOf(hb.Images, now); hash != n.ImagesHash {
			if err := models.ReplaceNodeImages(tx, n.ID, hash, imgs); err != nil {
				return err
			}
		}
		if n.Health == models.NodeSilent { // heard from again, whatever it says
			if err := CloseIncidents(tx, n.ID, 0, models.IncidentNodeSilent, now); err != nil {
				return err
			}
		}
		if hb.Host.InitError == "" {
			if err := f.recordGPUs(tx, &n, hb.Host, now, &sampled); err != nil {
				return err
			}
		}
		if err := supply.RefreshNodeAvailability(tx, n.ID, now); err != nil {
			return err
		}
		// Offers waiting for this node's GPUs are listed once they show.
		return SettleAwaitingOffers(tx, n.ID, now)
	})
	reply.NodeID = nodeID
	if err == nil && len(sampled) > 0 {
		// After the commit, in a statement of its own: see
		// supply.NotifyGPUsSampled. A lost notification costs a usage
		// section one sample's figures until the next one.
		if nerr := supply.NotifyGPUsSampled(ctx, f.DB, sampled); nerr != nil {
			slog.Warn("gpu samples: notify the change feed", "node", nodeID, "err", nerr)
		}
	}
	return reply, err
}

// nodeHealthOf is a node's health as its heartbeat shows it: an agent
// that cannot read NVML says nothing about its GPUs.
func nodeHealthOf(host gpu.Host) models.NodeHealth {
	if host.InitError != "" {
		return models.NodeNoNVML
	}
	return models.NodeHealthy
}

// gpuVerdict is a reported GPU's health and reasons (in English, and as a
// message): the agent's verdict, and failing as well when the GPU is not
// the model the node lists (it is never rented as that model).
func gpuVerdict(g gpu.Info, nodeModel string) (health models.GPUHealth, reasons string, msg locales.Msg) {
	health = models.GPUHealthy
	if !g.Health.Healthy {
		health = models.GPUFailing
		if gpuMissing(g) {
			health = models.GPUMissing
		}
	}
	reasons = strings.Join(g.Health.Reasons, "\n")
	var extra []locales.Msg
	if m, ok := catalog.GPUModelBySlug(nodeModel); ok && !strings.Contains(g.Name, m.NVMLNameContains) {
		health = models.GPUFailing
		reasons = strings.TrimSpace(reasons + "\n" + fmt.Sprintf("NVML reports %q, but the node lists %s", g.Name, m.Name))
		extra = append(extra, locales.M("check.model_mismatch", g.Name, m.Name))
	}
	return health, reasons, ReasonsMsg(g.Health, extra...)
}

// readingStale reports whether a known GPU's stored reading is to be
// rewritten: its verdict or identity changed, or its telemetry is 30 s
// old (heartbeats every 5 s would otherwise write every GPU each time).
func readingStale(cur *models.GPU, g gpu.Info, health models.GPUHealth, reasons string, now time.Time) bool {
	changed := cur.Health != health || cur.Reasons != reasons || cur.UUID != g.UUID || cur.Name != g.Name
	return changed || cur.CheckedAt == nil || now.Sub(*cur.CheckedAt) >= 30*time.Second
}

// recordGPUs stores what the agent read about each GPU, matched by UUID:
// a GPU is identified by its UUID, and its index is an attribute that
// shifts when a GPU before it stops enumerating (see placeGPUs). A slot the
// agent could not read (gpu.IsUnreadableSlot) marks the GPU stored at that
// index missing, if one is not reported elsewhere; the others stay as they
// read. Telemetry is written at most every 30 s per GPU unless the verdict
// changed, to keep heartbeats cheap on the single SQLite writer.
func (f *Fleet) recordGPUs(tx *gorm.DB, n *models.Node, host gpu.Host, now time.Time, sampled *[]int64) error {
	if n.GPUModel == "" {
		// A node added by a provider learns its model from its first
		// inventory; until a catalogue model is recognised its GPUs cannot
		// be stored (they reference the catalogue) and nothing is listed.
		slug := DetectNodeModel(host)
		if slug == "" {
			if len(host.GPUs) > 0 {
				slog.Warn("node reports no catalogue GPU model", "node", n.ID, "nvml_name", host.GPUs[0].Name)
			}
			return nil
		}
		if err := supply.SetNodeGPUModel(tx, n.ID, slug); err != nil {
			return err
		}
		n.GPUModel = slug
		slog.Info("node model detected from NVML", "node", n.ID, "gpu", slug)
	}
	var gpus, unreadable []gpu.Info
	reported := map[string]bool{}
	for _, g := range host.GPUs {
		if g.Unreadable || gpu.IsUnreadableSlot(g.UUID) {
			unreadable = append(unreadable, g)
			continue
		}
		if reported[g.UUID] {
			return gpuConflict(errTwice, g)
		}
		reported[g.UUID] = true
		gpus = append(gpus, g)
	}
	have, err := supply.GPUsOfNode(tx, n.ID)
	if err != nil {
		return err
	}
	byUUID := map[string]*models.GPU{}
	byIdx := map[int]*models.GPU{}
	for i := range have {
		byUUID[have[i].UUID] = &have[i]
		byIdx[have[i].Idx] = &have[i]
	}
	// An unreadable slot is the GPU stored at its index, unless that GPU
	// is reported by UUID (then the slot's GPU was never stored).
	slotGPU := map[int64]gpu.Info{}
	for _, g := range unreadable {
		if cur, ok := byIdx[g.Index]; ok && !reported[cur.UUID] {
			slotGPU[cur.ID] = g
		} else {
			slog.Warn("node reports a GPU slot it cannot read", "node", n.ID, "slot", g.Index, "reasons", g.Health.Reasons)
		}
	}
	place, err := placeGPUs(tx, have, gpus)
	if err != nil {
		return err
	}
	for _, g := range gpus {
		health, reasons, rmsg := gpuVerdict(g, n.GPUModel)
		tel, _ := json.Marshal(g.Telemetry)
		cur, ok := byUUID[g.UUID]
		if !ok {
			row := models.GPU{NodeID: n.ID, Idx: place[g.UUID], UUID: g.UUID, GPUModel: n.GPUModel, State: models.GPUFree,
				Name: g.Name, PCIBusID: g.PCIBusID, MemoryMiB: int64(g.MemoryTotalMiB), Health: health, Reasons: reasons, ReasonsMsg: rmsg, Telemetry: string(tel), CheckedAt: &now}
			if health != models.GPUHealthy {
				row.State = models.GPUUnhealthy
			}
			if err := supply.InsertGPU(tx, &row); err != nil {
				return gpuConflict(err, g)
			}
			continue
		}
		if !readingStale(cur, g, health, reasons, now) {
			continue
		}
		up := supply.GPUReading{UUID: g.UUID, Name: g.Name, PCIBusID: g.PCIBusID, MemoryMiB: int64(g.MemoryTotalMiB),
			Health: health, Reasons: reasons, ReasonsMsg: rmsg, Telemetry: string(tel), CheckedAt: now}
		if err := supply.RecordGPUReading(tx, cur.ID, up); err != nil {
			return gpuConflict(err, g)
		}
		if ok, err := recordSample(tx, cur, g.Telemetry, now); err != nil {
			return err
		} else if ok {
			*sampled = append(*sampled, cur.ID)
		}
		if err := f.applyGPUHealth(tx, cur, health, reasons, rmsg, now); err != nil {
			return err
		}
	}
	for i := range have {
		g := &have[i]
		if reported[g.UUID] {
			continue
		}
		reasons, msg := "not reported by NVML (fallen off the bus?)", locales.Lines(locales.M("check.not_reported"))
		if slot, ok := slotGPU[g.ID]; ok {
			reasons, msg = strings.Join(slot.Health.Reasons, "\n"), ReasonsMsg(slot.Health)
		}
		if g.Health == models.GPUMissing && g.Reasons == reasons {
			continue
		}
		if err := supply.MarkGPUMissing(tx, g.ID, reasons, msg, now); err != nil {
			return err
		}
		if err := f.applyGPUHealth(tx, g, models.GPUMissing, reasons, msg, now); err != nil {
			return err
		}
	}
	return nil
}

// errTwice is a report naming one GPU twice.
var errTwice = errors.New("GPU reported twice")

// placeGPUs decides, in tx, the index of every GPU of the node after a
// report and moves the stored ones whose index changed: a GPU the agent
// reads claims the index it is enumerated at now; a GPU reported missing,
// or not reported, keeps its index unless a GPU read claims it, and then
// takes the lowest free one. Moved GPUs are parked first, since indexes
// are unique per node. It returns the index of each reported GPU.
func placeGPUs(tx *gorm.DB, have []models.GPU, gpus []gpu.Info) (map[string]int, error) {
	place := map[string]int{}
	taken := map[int]bool{}
	missing := map[string]bool{}
	for _, g := range gpus {
		if gpuMissing(g) {
			missing[g.UUID] = true
			continue
		}
		if taken[g.Index] {
			return nil, gpuConflict(errTwice, g)
		}
		place[g.UUID], taken[g.Index] = g.Index, true
	}
	// The others keep their index where they can: stored ones first, then
	// new ones reported missing.
	var homeless []string
	for _, h := range have {
		if _, placed := place[h.UUID]; placed {
			continue
		}
		if taken[h.Idx] {
			homeless = append(homeless, h.UUID)
			continue
		}
		place[h.UUID], taken[h.Idx] = h.Idx, true
	}
	for _, g := range gpus {
		if _, placed := place[g.UUID]; placed || !missing[g.UUID] {
			continue
		}
		if taken[g.Index] {
			homeless = append(homeless, g.UUID)
			continue
		}
		place[g.UUID], taken[g.Index] = g.Index, true
	}
	free := 0
	for _, u := range homeless {
		for taken[free] {
			free++
		}
		place[u], taken[free] = free, true
	}
	var moved []models.GPU
	for _, h := range have {
		if place[h.UUID] != h.Idx {
			if err := supply.MoveGPUIndex(tx, h.ID, supply.ParkedGPUIndex(h.ID)); err != nil {
				return nil, err
			}
			moved = append(moved, h)
		}
	}
	for _, h := range moved {
		if err := supply.MoveGPUIndex(tx, h.ID, place[h.UUID]); err != nil {
			return nil, err
		}
	}
	return place, nil
}

// gpuMissing reports whether the agent reports a GPU missing (its
// "present" check failed): its index is the one it was last seen at.
func gpuMissing(g gpu.Info) bool {
	for _, c := range g.Health.Checks {
		if c.Name == gpu.CheckPresent && !c.OK {
			return true
		}
	}
	return false
}

// recordSample keeps a busy GPU's telemetry in its history (see
// migration 00017), on its reading's cadence: one row per rented GPU
// about every 30 s and on each change of its verdict, pruned after a day
// by the purge job. Free GPUs keep
// only their latest reading. It reports whether it added a sample.
func recordSample(tx *gorm.DB, cur *models.GPU, t gpu.Telemetry, now time.Time) (bool, error) {
	if cur.State != models.GPUBusy {
		return false, nil
	}
	return true, supply.InsertGPUSample(tx, &models.GPUSample{GPUID: cur.ID, At: now, UtilPct: t.UtilizationPct,
		MemUsedMiB: int64(min(t.MemoryUsedMiB, 1<<62)), PowerW: t.PowerW, TempC: t.TemperatureC, SMClockMHz: t.SMClockMHz})
}

// gpuConflict turns a heartbeat whose GPU UUID another node already has
// (two agents sharing a state file, a GPU moved without deregistering), or
// that names one GPU twice or two GPUs read at one index, into a clear 409
// for the agent, not a server error.
func gpuConflict(err error, g gpu.Info) error {
	if errors.Is(err, errTwice) || ledger.IsUniqueViolation(err) {
		return &apperr.Error{Code: apperr.ECONFLICT,
			Message: fmt.Sprintf("GPU %d (%s) is already registered, to another node or twice in this report", g.Index, g.UUID)}
	}
	return err
}

// applyGPUHealth keeps a GPU's state and incidents in step with its
// verdict: a failing GPU that is free becomes unhealthy (a rented one stays
// busy until the health watch moves its rental off it) and opens an
// incident; a GPU that passes again is free again and its incident closed.
// reasons are in English, msg the same as a message.
func (f *Fleet) applyGPUHealth(tx *gorm.DB, g *models.GPU, health models.GPUHealth, reasons string, msg locales.Msg, now time.Time) error {
	m := healthMoveOf(g, health)
	if m.closeIncident {
		if err := CloseIncidents(tx, g.NodeID, g.ID, models.IncidentGPUFailing, now); err != nil {
			return err
		}
	}
	if m.release {
		return supply.ReleaseRecoveredGPU(tx, g.ID)
	}
	if m.failing {
		if _, err := OpenIncident(tx, g.NodeID, g.ID, models.IncidentGPUFailing, reasons, now, msg); err != nil {
			return err
		}
		return supply.HoldFailingGPU(tx, g.ID)
	}
	return nil
}

// healthMove is what a GPU's new verdict asks of its incident and state.
type healthMove struct {
	// closeIncident: it passes again after failing.
	closeIncident bool
	// release: it passes again and was held out of the free pool.
	release bool
	// failing: it fails; its incident is opened (or kept open) and, if
	// free, it is held out of the free pool.
	failing bool
}

// healthMoveOf decides what the verdict health asks of GPU g as stored
// before it (see applyGPUHealth).
func healthMoveOf(g *models.GPU, health models.GPUHealth) healthMove {
	if health != models.GPUHealthy {
		return healthMove{failing: true}
	}
	return healthMove{
		closeIncident: g.Health == models.GPUFailing || g.Health == models.GPUMissing,
		release:       g.State == models.GPUUnhealthy,
	}
}

// FlapWindow is how soon after an incident closes a new failure of the
// same GPU (or silence of the same node) reopens it rather than opening
// another: a verdict that flips on every heartbeat is one incident.
const FlapWindow = 10 * time.Minute

// OpenIncident makes sure an incident of the kind is open for the node
// (and GPU) and returns its id (see supply.EnsureIncident and FlapWindow);
// msg, when given, is the reasons as a message.
func OpenIncident(tx *gorm.DB, nodeID, gpuID int64, kind, reasons string, now time.Time, msg ...locales.Msg) (int64, error) {
	return supply.EnsureIncident(tx, nodeID, gpuID, kind, reasons, now, FlapWindow, msg...)
}

// CloseIncidents closes, in tx, the node's (gpuID 0) or GPU's open
// incidents of the kind (see supply.CloseIncidents).
func CloseIncidents(tx *gorm.DB, nodeID, gpuID int64, kind string, now time.Time) error {
	return supply.CloseIncidents(tx, nodeID, gpuID, kind, now)
}

// EnqueueTask adds a task for a node's agent in tx unless one with the
// same key exists, and returns its id. The caller signals the hub after
// the commit.
func EnqueueTask(tx *gorm.DB, nodeID int64, rentalID *int64, key string, t agent.Task, now time.Time) (int64, error) {
	id, found, err := supply.AgentTaskIDByKey(tx, key)
	if err != nil || found {
		return id, err
	}
	row := models.AgentTask{NodeID: nodeID, RentalID: rentalID, Kind: t.Kind, IdemKey: key, Payload: "{}", Status: models.TaskQueued, CreatedAt: now}
	if err := supply.InsertAgentTask(tx, &row); err != nil {
		return 0, err
	}
	t.ID = row.ID
	p, _ := json.Marshal(t)
	return row.ID, supply.SetAgentTaskPayload(tx, row.ID, string(p))
}

// ExpireTasks withdraws a rental's verify and launch tasks on a node that
// the rental is leaving, so an agent that comes back later never runs
// them (the stop task sent with them covers anything already launched).
func ExpireTasks(tx *gorm.DB, rentalID, nodeID int64, now time.Time) error {
	return supply.ExpireAgentTasks(tx, rentalID, nodeID, []string{agent.TaskVerify, agent.TaskLaunch},
		`{"ok":false,"error":"withdrawn: the rental moved on"}`, now)
}

// NodeKey is the hub key an agent's long-poll waits on: signalled when a
// task is queued for the node.
func NodeKey(id int64) string { return fmt.Sprintf("node:%d", id) }

// TaskKey is the hub key a wait for a task's result waits on: signalled
// when the agent posts it.
func TaskKey(id int64) string { return fmt.Sprintf("task:%d", id) }

// NextTasks is the agent's long-poll: it returns the node's queued tasks
// (marking them sent) as soon as there are any, or none after wait.
func (f *Fleet) NextTasks(ctx context.Context, nodeID int64, wait time.Duration) ([]agent.Task, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		woken := f.Hub.Wait(NodeKey(nodeID))
		ts, err := f.takeTasks(ctx, nodeID)
		if err != nil || len(ts) > 0 {
			return ts, err
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-f.Hub.Closed():
			return nil, nil
		case <-deadline.C:
			return nil, nil
		case <-woken:
		case <-time.After(time.Second): // another replica may have queued one
		}
	}
}

// ResendAfter is when a task handed to an agent without a result is
// handed out again: the poll's answer may have been lost (a server that
// died, a dropped connection). Agents run a task id once, so a repeat of
// one still running is ignored.
const ResendAfter = 15 * time.Second

func (f *Fleet) takeTasks(ctx context.Context, nodeID int64) ([]agent.Task, error) {
	now := f.DB.Now().UTC()
	resendBefore := now.Add(-ResendAfter)
	rows, err := supply.DueAgentTasks(ctx, f.DB, nodeID, resendBefore, 20)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var out []agent.Task
	var failed []int64
	err = f.DB.Tx(ctx, func(tx *gorm.DB) error {
		out, failed = out[:0], failed[:0]
		for _, r := range rows {
			taken, err := supply.MarkAgentTaskSent(tx, r.ID, nodeID, resendBefore, now)
			if err != nil {
				return err
			}
			if !taken {
				continue // another long-poll took it
			}
			var t agent.Task
			if err := json.Unmarshal([]byte(r.Payload), &t); err != nil {
				return fmt.Errorf("task %d payload: %w", r.ID, err)
			}
			if ok, err := f.withPullAuth(tx, &r, &t, now); err != nil {
				return err
			} else if !ok {
				failed = append(failed, r.ID)
				continue
			}
			if ok, err := f.withLaunchSpec(tx, &r, &t, now); err != nil {
				return err
			} else if !ok {
				failed = append(failed, r.ID)
				continue
			}
			if err := witness.LaunchVerify(tx, &t, f.VerifyBaseURL, now); err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	if err == nil {
		for _, id := range failed {
			f.Hub.Signal(TaskKey(id))
		}
	}
	return out, err
}

// withPullAuth gives, in tx, a launch task the registry credential its
// rental's image is pulled with, opened only now: the stored task (its
// payload row) never holds it; and PullAlways where the node holds a
// copy pulled with someone's credentials. A credential that cannot be opened fails
// the task at once, saying why, and ok is false: the agent could only
// fail the pull.
func (f *Fleet) withPullAuth(tx *gorm.DB, row *models.AgentTask, t *agent.Task, now time.Time) (ok bool, err error) {
	if t.Kind != agent.TaskLaunch || t.RentalID == 0 || t.Image == "" {
		return true, nil
	}
	auth, err := images.PullAuth(tx, f.Credentials, t.RentalID, t.Image)
	if errors.Is(err, images.ErrRegistryAuthSealed) {
		slog.Error("registry credentials cannot be opened; failing the launch", "rental", t.RentalID, "task", t.ID, "err", err)
		res, _ := json.Marshal(agent.Result{Error: err.Error()})
		return false, supply.FinishAgentTask(tx, row, false, string(res), now)
	}
	if err != nil {
		return false, err
	}
	t.RegistryAuth = auth
	// The daemon keeps one copy of a reference for everyone: one pulled
	// with a renter's credentials must not run for a renter without them.
	// With credentials the agent always pulls (the registry checks them);
	// without, it pulls again where such a copy may be on the node.
	// By repository: another spelling, tag or digest of it resolves to
	// the same local copy.
	repo := images.RepositoryOf(t.Image)
	if auth != "" {
		return true, supply.MarkPrivatePull(tx, row.NodeID, repo, now)
	}
	if t.PullAlways, err = supply.PrivatePulled(tx, row.NodeID, repo); err != nil {
		return false, err
	}
	return true, nil
}
