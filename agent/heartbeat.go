package agent

import (
	"context"
	"net/http"
	"time"

	"suanli/gpu"
)

// imagesTimeout bounds listing the host's images for one heartbeat: a
// stuck Docker daemon must not hold up the heartbeat itself.
const imagesTimeout = 5 * time.Second

// heartbeatLoop sends a heartbeat every interval until ctx is done.
func (a *Agent) heartbeatLoop(ctx context.Context) {
	interval := a.cfg.HeartbeatEvery
	var bo backoff
	for {
		if a.silent() {
			if !sleep(ctx, a.idleWait()) {
				return
			}
			continue
		}

		reply, err := a.heartbeat(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := interval
		switch {
		case err == nil:
			bo.reset()
			if reply.IntervalSeconds > 0 {
				interval = time.Duration(reply.IntervalSeconds) * time.Second
			}
			wait = interval
		case isUnauthorized(err) && a.fallBack():
			// The configured token is tried at once: it is a different
			// token, not a retry of the rejected one, and fallBack
			// answers true only once per switch.
			a.log.Warn("stored node credential rejected; registering again with the configured token")
			wait = 0
		case isUnauthorized(err):
			wait = bo.next()
			a.log.Error("heartbeat rejected: the token is not valid for this server; retrying", "err", err, "retry_in", wait)
		case isTooMany(err):
			// Sent sooner than the server takes them (a restart, a retry
			// in a burst): wait as long as it says, at least one interval.
			wait = max(bo.after(err), interval)
			a.log.Info("heartbeat refused as too frequent; waiting", "retry_in", wait)
		default:
			wait = bo.after(err)
			a.log.Warn("heartbeat failed; retrying", "err", err, "retry_in", wait)
		}
		if !sleep(ctx, wait) {
			return
		}
	}
}

// heartbeat sends one heartbeat. A reply with a credential switches the
// agent to it; any accepted heartbeat means the token in use is a node
// credential, which lets polling start.
func (a *Agent) heartbeat(ctx context.Context) (HeartbeatReply, error) {
	hb := Heartbeat{
		AgentVersion: a.cfg.Version,
		Hostname:     a.hostname,
		Launcher:     a.cfg.Launcher.Name(),
		Host:         a.readGPUs(),
		PingURL:      a.cfg.PingURL,
		Images:       a.localImages(ctx),
		SentAt:       time.Now().UTC(),
	}
	if s, ok := a.cfg.Launcher.(SharedStorage); ok {
		hb.VolumeRoot = s.SharedVolumeRoot()
	}
	var reply HeartbeatReply
	if err := a.call(ctx, http.MethodPost, PathHeartbeat, requestTimeout, hb, &reply); err != nil {
		return reply, err
	}
	if reply.Credential != "" {
		a.mu.Lock()
		a.token = reply.Credential
		a.mu.Unlock()
		a.log.Info("registered with the server", "node_id", reply.NodeID)
		a.saveState(reply.NodeID, reply.Credential)
	}
	a.markRegistered()
	return reply, nil
}

// readGPUs reads the host's GPUs for a heartbeat, and keeps any critical
// XID the read found in the state file.
func (a *Agent) readGPUs() gpu.Host {
	h := a.cfg.GPUs.Read()
	a.saveXIDs()
	if h.InitError != "" {
		a.noteNVML(h.InitError)
	} else {
		a.noteNVML("")
	}
	return h
}

// noteNVML logs when NVML becomes unavailable or available again, not
// with every heartbeat (the heartbeat itself says "no NVML (retrying)").
func (a *Agent) noteNVML(msg string) {
	a.mu.Lock()
	was := a.nvmlErr
	a.nvmlErr = msg
	a.mu.Unlock()
	switch {
	case msg == was:
	case msg == "":
		a.log.Info("NVML available")
	default:
		a.log.Warn("NVML unavailable; heartbeats say so while it is retried with backoff", "err", msg)
	}
}

// fallBack switches from a rejected credential (stored, or handed out
// earlier and since revoked) to the configured token, and reports whether
// it switched. It does not when the configured token is the one rejected.
func (a *Agent) fallBack() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg.Token == "" || a.token == a.cfg.Token {
		return false
	}
	a.token = a.cfg.Token
	return true
}

// localImages lists the launcher's local images (nil for a launcher that
// has none). A failure is logged when it first appears or changes, not on
// every heartbeat, and the heartbeat goes without images.
func (a *Agent) localImages(ctx context.Context) []LocalImage {
	l, ok := a.cfg.Launcher.(ImageLister)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, imagesTimeout)
	defer cancel()
	images, err := l.LocalImages(ctx)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != a.imagesErr {
		if err != nil {
			a.log.Warn("cannot list the local images; heartbeats go without them", "err", err)
		} else {
			a.log.Info("listing the local images again")
		}
		a.imagesErr = msg
	}
	return images
}
