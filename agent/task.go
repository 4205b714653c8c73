package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// taskTimeout bounds a launch or stop, so that a hung docker pull or
// provider script cannot hold a task forever; the server will have given
// up on it long before.
const taskTimeout = 15 * time.Minute

// execute runs one task and says how it went.
func (a *Agent) execute(ctx context.Context, t Task) Result {
	switch t.Kind {
	case TaskVerify:
		return a.verify(t)
	case TaskLaunch:
		return a.launch(ctx, t)
	case TaskStop:
		return a.stop(ctx, t)
	case TaskDeleteVolume:
		return a.deleteVolume(ctx, t)
	case TaskBenchmark:
		return a.benchmark(ctx, t)
	case TaskClearXIDs:
		return a.clearXIDs(t)
	default:
		return Result{Error: fmt.Sprintf("unknown task kind %q", t.Kind)}
	}
}

// clearXIDs forgets the critical XIDs of the task's GPUs, and saves that
// in the state file, so that they pass again (unless they raise new ones).
func (a *Agent) clearXIDs(t Task) Result {
	if len(t.GPUUUIDs) == 0 {
		return Result{Error: "clear_xids task names no GPUs"}
	}
	k, ok := a.cfg.GPUs.(XIDKeeper)
	if !ok {
		return Result{Error: "this agent keeps no XIDs to clear"}
	}
	for _, u := range t.GPUUUIDs {
		k.ClearXIDs(u)
	}
	a.saveXIDs()
	a.log.Info("critical XIDs cleared by an operator", "gpus", t.GPUUUIDs)
	return Result{OK: true}
}

// verify runs fresh NVML checks on exactly the task's GPUs. A GPU that
// NVML does not report is a failure too: it may have fallen off the bus.
func (a *Agent) verify(t Task) Result {
	if len(t.GPUUUIDs) == 0 {
		return Result{Error: "verify task names no GPUs"}
	}
	verdicts := a.cfg.GPUs.Verify(t.GPUUUIDs)
	a.saveXIDs()
	var reasons []string
	for _, uuid := range t.GPUUUIDs {
		v, ok := verdicts[uuid]
		switch {
		case !ok:
			reasons = append(reasons, uuid+": not found on this host")
		case !v.Healthy && len(v.Reasons) == 0:
			reasons = append(reasons, uuid+": unhealthy")
		case !v.Healthy:
			reasons = append(reasons, uuid+": "+strings.Join(v.Reasons, ", "))
		}
	}
	if len(reasons) > 0 {
		return Result{Verdicts: verdicts, Error: strings.Join(reasons, "; ")}
	}
	return Result{OK: true, Verdicts: verdicts}
}

// launch starts the workload. The server has verified these GPUs just
// before, with a verify task of its own, so they are not checked again.
// An image pull's progress goes to the server while it runs.
func (a *Agent) launch(ctx context.Context, t Task) Result {
	if len(t.GPUUUIDs) == 0 && !t.NoGPU {
		return Result{Error: "launch task names no GPUs"}
	}
	if err := CheckLaunchEnv(t.Env, t.Onstart); err != nil {
		return Result{Error: "launch task: " + err.Error()}
	}
	env := maps.Clone(t.Env)
	if _, skipped := RenterEnv(env); len(skipped) > 0 {
		// Every launcher would drop them; the operator learns why here.
		a.log.Warn("the renter's environment names variables the launcher sets itself; skipping them", "rental", t.RentalID, "names", skipped)
		for _, name := range skipped {
			delete(env, name)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, taskTimeout)
	defer cancel()
	progress := a.newProgressReporter(ctx, t.ID)
	defer progress.stop()
	spec := LaunchSpec{
		RentalID:     t.RentalID,
		WorkspaceID:  t.WorkspaceID,
		GPUUUIDs:     slices.Clone(t.GPUUUIDs),
		SSHPublicKey: t.SSHPublicKey,
		Image:        t.Image,
		RegistryAuth: t.RegistryAuth,
		PullAlways:   t.PullAlways,
		VolumeGB:     t.VolumeGB,
		NoGPU:        t.NoGPU,
		Verify:       t.Verify,
		Env:          env,
		Onstart:      t.Onstart,
		Progress:     progress.report,
	}
	if t.NoGPU {
		spec.GPUUUIDs = nil
	}
	if t.Limits != nil {
		l := *t.Limits
		spec.Limits = &l
	}
	acc, err := a.cfg.Launcher.Launch(ctx, spec)
	if err == nil && acc == nil {
		err = errors.New("launcher returned no access details")
	}
	if err != nil {
		return Result{Error: err.Error()}
	}
	return Result{OK: true, Access: acc}
}

// stop stops the workload; stopping one that is not running succeeds, so
// the server may repeat a stop it is unsure about.
func (a *Agent) stop(ctx context.Context, t Task) Result {
	ctx, cancel := context.WithTimeout(ctx, taskTimeout)
	defer cancel()
	err := a.cfg.Launcher.Stop(ctx, StopSpec{
		RentalID:    t.RentalID,
		WorkspaceID: t.WorkspaceID,
		GPUUUIDs:    slices.Clone(t.GPUUUIDs),
		Grace:       time.Duration(t.GraceSeconds) * time.Second,
	})
	if err != nil {
		return Result{Error: err.Error()}
	}
	return Result{OK: true}
}

// deleteVolume removes the task's workspace on this node (and the
// rental's container, if one still runs); a workspace that is not here
// is deleted already, so the server may repeat the task.
func (a *Agent) deleteVolume(ctx context.Context, t Task) Result {
	if t.WorkspaceID == "" && t.RentalID == 0 {
		return Result{Error: "delete_volume task names no workspace"}
	}
	ctx, cancel := context.WithTimeout(ctx, taskTimeout)
	defer cancel()
	if err := a.cfg.Launcher.DeleteVolume(ctx, VolumeSpec{RentalID: t.RentalID, WorkspaceID: t.WorkspaceID}); err != nil {
		return Result{Error: err.Error()}
	}
	return Result{OK: true}
}
