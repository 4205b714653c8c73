package gpu

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"suanli/gpu/evidence"
	"suanli/locales"
)

// Every outcome of every check carries a message the catalogues know in
// both languages, whose English is the check's detail, and which reads the
// same after the agent's JSON (what the server stores and renders).
func TestEveryCheckOutcomeIsAMessageInBothLanguages(t *testing.T) {
	now := time.Now()
	h := (&Reader{history: map[string]*history{}}).hist("GPU-x")
	links := []linkState{{link: 0, up: true}, {link: 1, up: true}}
	ok := sample{info: Info{PCIBusID: "00000000:18:00.0", PCIeGen: 5, PCIeGenMax: 5, PCIeWidth: 16, PCIeWidthMax: 16},
		temp: 40, slowdown: 90, xid: (&xidWatch{noEvents: true, unsupported: locales.M("check.xid.unsupported", nvml.ERROR_NOT_SUPPORTED.Error())}).check(),
		pcieReplay: pcieReplayCheck(h, 3, nvml.SUCCESS, now), nvlink: nvlinkCheck(h, links, 0),
		nvlinkErrors: nvlinkErrorsCheck(nil, nil, h, nil, now), recovery: Check{Name: CheckRecovery, OK: true}}
	ok.recovery.say(locales.M("check.recovery.none"))
	var checks []Check
	add := func(cs ...Check) { checks = append(checks, cs...) }
	add(verdict(ok, now).Checks...)
	add(pcieReplayCheck(h, 5, nvml.SUCCESS, now.Add(time.Minute)), pcieReplayCheck(h, 50, nvml.SUCCESS, now.Add(2*time.Minute)))
	add(nvlinkCheck(h, []linkState{{link: 0, up: true}, {link: 1}}, 0), nvlinkCheck(&history{linksUp: map[int]bool{}}, nil, 0))
	for _, a := range []uint64{1, 2, 3, 4, 5, 6, 7, 99} {
		c := Check{Name: CheckRecovery}
		c.say(locales.M("check.recovery.needed", recoveryAction(a)))
		add(c)
	}
	for _, m := range []locales.Msg{locales.M("check.recovery.unsupported"), locales.M("check.nvlink_errors.none"), locales.M("check.nvlink_errors.baseline"),
		locales.M("check.nvlink_errors.replay", 1, 2, "3, 4", "1m0s"), locales.M("check.nvlink_errors.crc", 9000, "1m0s", 100),
		locales.M("check.nvlink_errors.ok", 7, "1m0s"), locales.M("check.present.unreadable", 2, "ERROR_NO_PERMISSION")} {
		c := Check{Name: "other"}
		c.say(m)
		add(c)
	}
	hw := uint64(nvml.ClocksThrottleReasonHwSlowdown)
	for _, run := range []slowRun{{Run: evidence.Run{Reads: 1}}, {Run: evidence.Run{Reads: 13, Since: now, Last: now.Add(time.Minute)}},
		{Run: evidence.Run{Reads: 5}, verified: true}} {
		s := ok
		s.reasons, s.slow = hw, run
		add(clockEventsCheck(s))
	}
	s := ok
	s.slow.cleared = true
	add(clockEventsCheck(s))
	for _, mig := range [][2]int{{nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE}, {nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_ENABLE}} {
		s := ok
		s.migCurrent, s.migPending = mig[0], mig[1]
		add(migCheck(s))
	}
	add((&xidWatch{regErr: nvml.ERROR_UNKNOWN}).check(), (&xidWatch{}).check())
	for _, ret := range []nvml.Return{nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_UNKNOWN, nvml.ERROR_TIMEOUT} {
		s := ok
		s.eccRet, s.remapRet, s.retiredRet, s.tempRet, s.reasonsRet, s.migRet = ret, ret, ret, ret, ret, ret
		add(eccCheck(s), rowRemapCheck(s), retiredPagesCheck(s), temperatureCheck(s), clockEventsCheck(s), migCheck(s))
		add(pcieReplayCheck(h, 0, ret, now))
		s = ok
		s.slowdownRet = ret
		add(temperatureCheck(s))
	}
	bad := ok
	bad.eccUncorrected, bad.remapFailed, bad.retiredPending, bad.temp = 3, true, nvml.FEATURE_ENABLED, 95
	bad.reasons = uint64(nvml.ClocksThrottleReasonHwThermalSlowdown | nvml.ClocksEventReasonSwPowerCap)
	add(eccCheck(bad), rowRemapCheck(bad), retiredPagesCheck(bad), temperatureCheck(bad), clockEventsCheck(bad))
	bad.remapFailed, bad.remapPending = false, true
	bad.reasons = uint64(nvml.ClocksEventReasonGpuIdle | nvml.ClocksEventReasonSyncBoost | nvml.ClocksEventReasonApplicationsClocksSetting |
		nvml.ClocksEventReasonSwThermalSlowdown | nvml.ClocksEventReasonDisplayClockSetting)
	add(rowRemapCheck(bad), clockEventsCheck(bad))
	bad.reasons = uint64(nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown)
	add(clockEventsCheck(bad))
	for _, i := range []Info{
		{},
		{PCIeGen: 5, PCIeGenMax: 5, PCIeWidth: 8, PCIeWidthMax: 16},
		{PCIeGen: 3, PCIeGenMax: 5, PCIeWidth: 16, PCIeWidthMax: 16, Telemetry: Telemetry{UtilizationPct: 90}},
		{PCIeGen: 1, PCIeGenMax: 5, PCIeWidth: 16, PCIeWidthMax: 16},
	} {
		add(pcieCheck(i))
	}
	w := &xidWatch{set: fakeSet{}, critical: []int{79, 48, 1234}, ignored: []int{13, 31}}
	add(w.check())
	w.set = nil
	w.noEvents, w.unsupported = true, locales.M("check.xid.unsupported", nvml.ERROR_NOT_SUPPORTED.Error())
	add(w.check())
	w.critical = nil
	add(w.check())
	add((&xidWatch{noEvents: true, unsupported: locales.M("check.xid.no_events", nvml.ERROR_UNKNOWN.Error())}).check())
	r := &Reader{known: map[string]Info{}, watches: map[string]*xidWatch{}, now: time.Now}
	add(r.missing(Info{Index: 3, UUID: UnreadableSlot(3), Unreadable: true}, nvml.ERROR_NO_PERMISSION, time.Now()).Health.Checks...)
	add(r.missing(Info{}, nvml.ERROR_GPU_IS_LOST, time.Now()).Health.Checks...)
	r.closed = true
	for _, v := range r.Verify([]string{"GPU-x"}) {
		add(v.Checks...)
	}

	if len(checks) < 35 {
		t.Fatalf("only %d outcomes: the test lost its cases", len(checks))
	}
	for _, c := range checks {
		if !c.Msg.Valid("check.", "xid.") {
			t.Errorf("%s: %q has no valid message: %+v", c.Name, c.Detail, c.Msg)
			continue
		}
		if en := c.Msg.Text(locales.EN); en != c.Detail {
			t.Errorf("%s: detail %q, but its message reads %q in English", c.Name, c.Detail, en)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back Check
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		for _, lang := range locales.Supported {
			if got, want := back.Text(lang), c.Msg.Text(lang); got != want {
				t.Errorf("%s in %s after JSON: %q, want %q", c.Name, lang, got, want)
			}
		}
		if zh := back.Text(locales.ZH); zh == c.Detail && c.Detail != "" {
			t.Errorf("%s: %q reads the same in Chinese", c.Name, zh)
		}
	}
	// An agent from before messages: its detail, as it came.
	old := Check{Name: CheckXID, OK: true, Detail: "no critical XIDs"}
	if got := old.Text(locales.ZH); got != "no critical XIDs" {
		t.Errorf("a check without a message reads %q", got)
	}
	// A message that is not a check's is not taken from an agent.
	forged := Check{Name: CheckXID, OK: true, Detail: "fine", Msg: locales.M("memo.trial_credit")}
	if got := forged.Text(locales.ZH); got != "fine" {
		t.Errorf("a check carrying another area's message reads %q", got)
	}
}

// fakeSet stands for a registered event set (check only asks whether one
// exists).
type fakeSet struct{ nvml.EventSet }
