package gpu

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"suanli/locales"
)

// Options tunes a Reader. The zero value is ready to use.
type Options struct {
	// IgnoreXIDs are the XIDs that do not make a GPU unhealthy because an
	// application, not the GPU, caused them. Nil means DefaultIgnoredXIDs();
	// an empty, non-nil slice ignores none.
	IgnoreXIDs []int
	// Now is the clock stamped on every reading, and the one the windows
	// of the checks that need several reads and the NVML init retries
	// follow; nil means time.Now.
	Now func() time.Time
	// ExpectNVLinks is how many NVLinks each GPU has that must be up (the
	// operator's word for the board, e.g. 18 on an HGX H100); 0 expects
	// only the links seen up since the Reader opened to stay up.
	ExpectNVLinks int
}

// The backoff of nvml.Init retries: the first after initRetryFirst,
// doubling up to initRetryMax (an agent started before the driver was
// loaded finds it within a minute of it loading).
const (
	initRetryFirst = time.Second
	initRetryMax   = time.Minute
)

// Reader reads the GPUs of one host through an nvml.Interface: the real
// library (nvml.New()) on a GPU host, a Sim anywhere else. It is safe for
// use by several goroutines. Make one with Open and Close it when done.
type Reader struct {
	lib    nvml.Interface
	now    func() time.Time
	ignore map[int]bool
	// base is what does not change between reads: versions and whether
	// the host is simulated.
	base Host
	// initErr is set while nvml.Init fails: go-nvml kills the process if
	// any other NVML function is called after that, so nothing is but
	// Init itself, retried with backoff (initTries failures so far, the
	// next not before initNext).
	initErr   string
	initTries int
	initNext  time.Time
	expectNVL int
	// eventReasons is whether the driver has
	// nvmlDeviceGetCurrentClocksEventReasons (R535+); older drivers only
	// have the throttle-reasons call, and calling a missing symbol kills
	// the process.
	eventReasons bool
	// remappedRows is whether the driver has nvmlDeviceGetRemappedRows
	// (R460+).
	remappedRows bool

	// life is held for reading by every read and for writing by Close, so
	// that no NVML call runs after Shutdown.
	life   sync.RWMutex
	closed bool

	mu sync.Mutex // guards watches and known
	// watches are the XID event sets, by GPU UUID.
	watches map[string]*xidWatch
	// known is the last inventory read of every GPU ever seen, by UUID,
	// so that a GPU that drops out of NVML is still reported, as missing.
	known map[string]Info
	// slots are the UUID last read at each index.
	slots map[int]string
	// history is what the checks that need several reads remember, by
	// UUID.
	history map[string]*history
}

// simulated is implemented by Sim, so that a Reader can mark its host as
// simulated without being told.
type simulated interface {
	simulatedModel() string
}

// Open initialises NVML and registers for XID events on every GPU. It
// always returns a usable Reader: when nvml.Init fails the error says why,
// and Read reports it in Host.InitError ("no NVML (retrying): …") without
// calling any other NVML function, while Read, Verify and NewSampler try
// Init again with backoff (1 s, doubling to a minute) until it succeeds:
// an agent started before the driver is ready finds it without a restart.
func Open(lib nvml.Interface, opts Options) (*Reader, error) {
	r := &Reader{
		lib:       lib,
		now:       opts.Now,
		ignore:    map[int]bool{},
		watches:   map[string]*xidWatch{},
		known:     map[string]Info{},
		slots:     map[int]string{},
		history:   map[string]*history{},
		expectNVL: opts.ExpectNVLinks,
	}
	if r.now == nil {
		r.now = time.Now
	}
	ignore := opts.IgnoreXIDs
	if ignore == nil {
		ignore = DefaultIgnoredXIDs()
	}
	for _, x := range ignore {
		r.ignore[x] = true
	}
	if s, ok := lib.(simulated); ok {
		r.base.Simulated = true
		r.base.Model = s.simulatedModel()
	}

	r.life.Lock()
	err := r.initLocked()
	r.life.Unlock()
	if err != nil {
		return r, err
	}
	// The first read registers the XID event sets and remembers the
	// inventory, so that XIDs raised from now on are caught.
	r.Read()
	return r, nil
}

// initLocked calls nvml.Init and, when it succeeds, reads what does not
// change (versions, which calls the driver has). When it fails, it
// schedules the next try and nothing else is called. The caller holds
// life for writing.
func (r *Reader) initLocked() error {
	// Calling Init again after it failed is what go-nvml allows: it opens
	// libnvidia-ml.so.1 again if that failed, and otherwise only calls
	// nvmlInit again (its reference count of the open library grows by
	// one per try, which keeps the library loaded and costs nothing).
	if ret := r.lib.Init(); ret != nvml.SUCCESS {
		r.initErr = "NVML init: " + ret.Error()
		wait := initRetryFirst << min(r.initTries, 6)
		r.initTries++
		r.initNext = r.now().Add(min(wait, initRetryMax))
		return fmt.Errorf("gpu: %s", r.initErr)
	}
	if r.initTries > 0 {
		slog.Info("NVML initialised after retrying", "failed_tries", r.initTries)
	}
	r.initErr, r.initTries = "", 0
	lib := r.lib
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		r.base.DriverVersion = v
	}
	if v, ret := lib.SystemGetNVMLVersion(); ret == nvml.SUCCESS {
		r.base.NVMLVersion = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		r.base.CUDADriverVersion = cudaVersion(v)
	}
	ext := lib.Extensions()
	r.eventReasons = ext.LookupSymbol("nvmlDeviceGetCurrentClocksEventReasons") == nil
	r.remappedRows = ext.LookupSymbol("nvmlDeviceGetRemappedRows") == nil
	return nil
}

// retryInit tries nvml.Init again when it failed before and its backoff
// has passed. Only Init is called until it succeeds.
func (r *Reader) retryInit() {
	r.life.RLock()
	due := r.initErr != "" && !r.closed && !r.now().Before(r.initNext)
	r.life.RUnlock()
	if !due {
		return
	}
	r.life.Lock()
	defer r.life.Unlock()
	if r.initErr != "" && !r.closed && !r.now().Before(r.initNext) {
		_ = r.initLocked()
	}
}

// cudaVersion formats NVML's CUDA driver version, 12040 → "12.4".
func cudaVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// Read returns the inventory, telemetry and health verdict of every GPU:
// those NVML enumerates now, then any seen before that it no longer does,
// reported missing. A slot whose GPU does not answer is reported missing
// as the GPU last seen there, or as UnreadableSlot(i) when none was; the
// other GPUs are read as usual.
func (r *Reader) Read() Host {
	r.retryInit()
	h := r.base
	h.At = r.now()
	h.GPUs = []Info{}

	r.life.RLock()
	defer r.life.RUnlock()
	if msg := r.unavailable(); msg != "" {
		h.InitError = msg
		return h
	}

	seen := map[string]bool{}
	n, ret := r.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		n = 0 // every GPU known is reported missing below, with ret
	}
	var lost []Info // slots that did not answer, reported after the others
	for i := 0; i < n; i++ {
		dev, hret := r.lib.DeviceGetHandleByIndex(i)
		if hret != nvml.SUCCESS {
			lost = append(lost, r.slotMissing(i, hret, h.At))
			continue
		}
		info := r.readDevice(dev, i, h.At, false)
		if info.Unreadable {
			lost = append(lost, info)
			continue
		}
		seen[info.UUID] = true
		h.GPUs = append(h.GPUs, info)
	}
	// A slot's last GPU may since have turned up at another index (the
	// indices shift when a GPU stops enumerating): it is not missing then.
	for _, info := range lost {
		if info.Unreadable || !seen[info.UUID] {
			if !info.Unreadable {
				seen[info.UUID] = true
			}
			h.GPUs = append(h.GPUs, info)
		}
	}
	if ret == nvml.SUCCESS {
		ret = nvml.ERROR_NOT_FOUND
	}
	for _, k := range r.knownExcept(seen) {
		h.GPUs = append(h.GPUs, r.missing(k, ret, h.At))
	}
	sortInfos(h.GPUs)
	return h
}

// slotMissing reports slot i, whose GPU did not answer (ret), as the GPU
// last seen there, or as an unreadable slot when none was.
func (r *Reader) slotMissing(i int, ret nvml.Return, at time.Time) Info {
	k, ok := r.knownAt(i)
	if !ok {
		k = Info{Index: i, UUID: UnreadableSlot(i), Unreadable: true}
	}
	info := r.missing(k, ret, at)
	info.Index = i
	return info
}

// Verify runs every check afresh on exactly the GPUs named, by UUID. A
// UUID NVML does not find gets a verdict whose "present" check fails.
func (r *Reader) Verify(uuids []string) map[string]Verdict {
	r.retryInit()
	at := r.now()
	out := make(map[string]Verdict, len(uuids))

	r.life.RLock()
	defer r.life.RUnlock()
	if msg := r.unavailable(); msg != "" {
		c := Check{Name: CheckPresent}
		c.say(locales.M("check.present.unavailable", msg))
		for _, u := range uuids {
			out[u] = failed(c, at)
		}
		return out
	}
	for _, u := range uuids {
		dev, ret := r.lib.DeviceGetHandleByUUID(u)
		if ret != nvml.SUCCESS {
			out[u] = r.missing(Info{UUID: u}, ret, at).Health
			continue
		}
		idx, ret := dev.GetIndex()
		if ret != nvml.SUCCESS {
			idx = r.knownIndex(u)
		}
		out[u] = r.readDevice(dev, idx, at, true).Health
	}
	return out
}

// ClearXIDs forgets the critical XIDs seen on one GPU, once whoever runs
// the host has dealt with them (reset the GPU, rebooted): until then they
// keep the GPU unhealthy.
func (r *Reader) ClearXIDs(uuid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.watches[uuid]; w != nil {
		w.critical = nil
		w.ignored = nil
	}
}

// Close frees the event sets and shuts NVML down. Reads after Close report
// the Reader closed instead of calling NVML.
func (r *Reader) Close() error {
	r.life.Lock()
	defer r.life.Unlock()
	if r.closed || r.initErr != "" {
		r.closed = true
		return nil
	}
	r.closed = true
	r.mu.Lock()
	for _, w := range r.watches {
		if w.set != nil {
			w.set.Free()
		}
	}
	r.watches = map[string]*xidWatch{}
	r.mu.Unlock()
	if ret := r.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("gpu: NVML shutdown: %s", ret.Error())
	}
	return nil
}

// unavailable says why NVML must not be called, or "" when it may.
// The caller holds life.
func (r *Reader) unavailable() string {
	switch {
	case r.closed:
		return "GPU reader closed"
	case r.initErr != "":
		return "no NVML (retrying): " + r.initErr
	}
	return ""
}

// probe notes whether any call made while reading one GPU answered
// ERROR_GPU_IS_LOST: the GPU has fallen off the bus, whatever the other
// calls said.
type probe struct{ lost bool }

func (p *probe) ok(ret nvml.Return) bool {
	if ret == nvml.ERROR_GPU_IS_LOST {
		p.lost = true
	}
	return ret == nvml.SUCCESS
}

// readCounters reads the telemetry both a full read and a sampler take:
// power, clocks, utilisation and the clock-event reasons (through the
// call this driver has). It returns the reasons call's result, which the
// health verdict needs too.
func (r *Reader) readCounters(dev nvml.Device, p *probe, t *Telemetry) (uint64, nvml.Return) {
	if v, ret := dev.GetPowerUsage(); p.ok(ret) {
		t.PowerW = float64(v) / 1000
	}
	if v, ret := dev.GetEnforcedPowerLimit(); p.ok(ret) {
		t.PowerLimitW = float64(v) / 1000
	}
	if v, ret := dev.GetClockInfo(nvml.CLOCK_SM); p.ok(ret) {
		t.SMClockMHz = int(v)
	}
	if v, ret := dev.GetClockInfo(nvml.CLOCK_MEM); p.ok(ret) {
		t.MemClockMHz = int(v)
	}
	if v, ret := dev.GetUtilizationRates(); p.ok(ret) {
		t.UtilizationPct = int(v.Gpu)
	}
	var reasons uint64
	var ret nvml.Return
	if r.eventReasons {
		reasons, ret = dev.GetCurrentClocksEventReasons()
	} else {
		reasons, ret = dev.GetCurrentClocksThrottleReasons()
	}
	if p.ok(ret) {
		t.ClockEventReasons = reasons
	}
	return reasons, ret
}

// readDevice reads one GPU's inventory, telemetry and health. A field
// NVML does not support (or fails to read) is left zero. verify is set
// for Verify's fresh checks before a rental: a hardware slowdown reason
// not yet sustained is then read again a few times (see verifySamples).
func (r *Reader) readDevice(dev nvml.Device, index int, at time.Time, verify bool) Info {
	var p probe
	uuid, ret := dev.GetUUID()
	if !p.ok(ret) || uuid == "" {
		// Without its UUID a GPU cannot be told apart from another: the
		// last one seen at this index is the best guess.
		if ret == nvml.SUCCESS {
			ret = nvml.ERROR_UNKNOWN
		}
		return r.slotMissing(index, ret, at)
	}

	info := Info{Index: index, UUID: uuid}
	var s sample
	if v, ret := dev.GetName(); p.ok(ret) {
		info.Name = v
	}
	if v, ret := dev.GetPciInfo(); p.ok(ret) {
		info.PCIBusID = busID(v)
	}
	if v, ret := dev.GetMemoryInfo(); p.ok(ret) {
		info.MemoryTotalMiB = v.Total >> 20
		info.Telemetry.MemoryUsedMiB = v.Used >> 20
	}
	if major, minor, ret := dev.GetCudaComputeCapability(); p.ok(ret) {
		info.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
	s.migCurrent, s.migPending, s.migRet = dev.GetMigMode()
	if p.ok(s.migRet) {
		info.MIGEnabled = s.migCurrent == nvml.DEVICE_MIG_ENABLE
	}
	if v, ret := dev.GetCurrPcieLinkGeneration(); p.ok(ret) {
		info.PCIeGen = v
	}
	if v, ret := dev.GetMaxPcieLinkGeneration(); p.ok(ret) {
		info.PCIeGenMax = v
	}
	if v, ret := dev.GetCurrPcieLinkWidth(); p.ok(ret) {
		info.PCIeWidth = v
	}
	if v, ret := dev.GetMaxPcieLinkWidth(); p.ok(ret) {
		info.PCIeWidthMax = v
	}
	links := nvlinkStates(dev, &p)
	for _, l := range links {
		if l.up {
			info.NVLinksUp++
		}
	}

	t := &info.Telemetry
	s.temp, s.tempRet = dev.GetTemperature(nvml.TEMPERATURE_GPU)
	if p.ok(s.tempRet) {
		t.TemperatureC = int(s.temp)
	}
	s.slowdown, s.slowdownRet = dev.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN)
	if p.ok(s.slowdownRet) {
		t.SlowdownTempC = int(s.slowdown)
	}
	s.reasons, s.reasonsRet = r.readCounters(dev, &p, t)

	s.eccUncorrected, s.eccRet = dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
	p.ok(s.eccRet)
	s.remapRet = nvml.ERROR_NOT_SUPPORTED
	if r.remappedRows {
		s.remapCorrectable, s.remapUncorrectable, s.remapPending, s.remapFailed, s.remapRet = dev.GetRemappedRows()
		p.ok(s.remapRet)
	}
	s.retiredPending, s.retiredRet = dev.GetRetiredPagesPendingStatus()
	p.ok(s.retiredRet)
	replays, replayRet := dev.GetPcieReplayCounter()
	p.ok(replayRet)
	s.recovery = recoveryCheck(dev, &p)

	var xret nvml.Return
	s.xid, xret = r.xidCheck(uuid, dev)
	p.ok(xret)

	r.mu.Lock()
	h := r.hist(uuid)
	if s.reasonsRet == nvml.SUCCESS {
		h.slow.note(s.reasons, at)
	}
	s.pcieReplay = pcieReplayCheck(h, replays, replayRet, at)
	s.nvlink = nvlinkCheck(h, links, r.expectNVL)
	s.nvlinkErrors = nvlinkErrorsCheck(dev, &p, h, links, at)
	s.slow = h.slow
	r.mu.Unlock()

	if verify && s.reasonsRet == nvml.SUCCESS && s.reasons&hwSlowdown != 0 && !s.slow.sustained() && !s.thermalContext() {
		s.reasons, s.slow = r.resampleSlowdown(dev, uuid, s.reasons)
		t.ClockEventReasons = s.reasons
	}

	s.info = info
	if p.lost {
		return r.missing(info, nvml.ERROR_GPU_IS_LOST, at)
	}
	info.Health = verdict(s, at)
	r.remember(info)
	return info
}

// resampleSlowdown reads a GPU's clock-event reasons verifySamples more
// times, verifySampleGap apart, while a hardware slowdown reason stays
// set, and returns the last reasons read and the run as it stands: with
// cleared set when one read was clear, verified when none was.
func (r *Reader) resampleSlowdown(dev nvml.Device, uuid string, reasons uint64) (uint64, slowRun) {
	var run slowRun
	for range verifySamples {
		time.Sleep(verifySampleGap)
		var v uint64
		var ret nvml.Return
		if r.eventReasons {
			v, ret = dev.GetCurrentClocksEventReasons()
		} else {
			v, ret = dev.GetCurrentClocksThrottleReasons()
		}
		if ret != nvml.SUCCESS {
			continue
		}
		reasons = v
		r.mu.Lock()
		h := r.hist(uuid)
		h.slow.note(v, r.now())
		run = h.slow
		r.mu.Unlock()
		if v&hwSlowdown == 0 {
			run.cleared = true
			return reasons, run
		}
	}
	r.mu.Lock()
	run = r.hist(uuid).slow
	r.mu.Unlock()
	run.verified = true
	return reasons, run
}

// nvlinkStates reads the state of each NVLink the GPU has. NVML answers
// ERROR_NOT_SUPPORTED or ERROR_INVALID_ARGUMENT past the last link the GPU
// has, so the list stops there; a link whose state cannot be read counts
// as down.
func nvlinkStates(dev nvml.Device, p *probe) []linkState {
	var out []linkState
	for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
		st, ret := dev.GetNvLinkState(link)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT || ret == nvml.ERROR_GPU_IS_LOST {
			p.ok(ret)
			break
		}
		out = append(out, linkState{link: link, up: ret == nvml.SUCCESS && st == nvml.FEATURE_ENABLED, ret: ret})
	}
	return out
}

// busID is the PCI bus id NVML reports, e.g. "00000000:18:00.0".
func busID(p nvml.PciInfo) string {
	b := make([]byte, 0, len(p.BusId))
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// missing turns a GPU's last known inventory into one reported missing:
// no telemetry, and a verdict whose "present" check fails. XIDs seen on
// it still count (XID 79 usually says why it went).
func (r *Reader) missing(info Info, ret nvml.Return, at time.Time) Info {
	info.Telemetry = Telemetry{}
	present := Check{Name: CheckPresent}
	if info.Unreadable {
		present.say(locales.M("check.present.unreadable", info.Index, ret.Error()))
	} else {
		present.say(locales.M("check.present.missing", ret.Error()))
	}
	checks := []Check{present}
	if !IsUnreadableSlot(info.UUID) {
		if x, ok := r.xidCheckKnown(info.UUID); ok {
			checks = append(checks, x)
		}
	}
	info.Health = verdictOf(checks, at)
	return info
}

// remember records a GPU's inventory, to report it should it go missing.
func (r *Reader) remember(info Info) {
	info.Telemetry = Telemetry{}
	info.Health = Verdict{}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known[info.UUID] = info
	r.slots[info.Index] = info.UUID
}

// knownAt returns the GPU last seen at an index, if any.
func (r *Reader) knownAt(index int) (Info, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.known[r.slots[index]]
	return k, ok
}

// knownIndex returns the index a GPU was last seen at, or -1.
func (r *Reader) knownIndex(uuid string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.known[uuid]; ok {
		return k.Index
	}
	return -1
}

// knownExcept returns the GPUs seen before and not in seen, by index.
func (r *Reader) knownExcept(seen map[string]bool) []Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Info
	for u, k := range r.known {
		if !seen[u] {
			out = append(out, k)
		}
	}
	sortInfos(out)
	return out
}
