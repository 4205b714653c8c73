package agent

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// state is what the state file holds: the node credential, and the server
// it is valid for, so that pointing the agent at another server does not
// send it this one's credential; and the critical XIDs seen on this host's
// GPUs (by UUID), which keep them unhealthy across restarts until an
// operator clears them (TaskClearXIDs).
type state struct {
	Server     string           `json:"server"`
	NodeID     int64            `json:"node_id,omitempty"`
	Credential string           `json:"credential"`
	XIDs       map[string][]int `json:"critical_xids,omitempty"`
}

// XIDKeeper is implemented by GPUs that keep sticky critical XIDs
// (gpu.Reader): the agent saves them in its state file and restores them
// at start, so that a restart does not forget a GPU's fault.
type XIDKeeper interface {
	// CriticalXIDs returns the critical XIDs not cleared, by GPU UUID.
	CriticalXIDs() map[string][]int
	// RestoreXIDs adds XIDs kept from before a restart.
	RestoreXIDs(map[string][]int)
	// ClearXIDs forgets the XIDs of one GPU.
	ClearXIDs(uuid string)
}

// loadState takes the credential from the state file, if there is one for
// this server, and restores the critical XIDs it keeps (whatever the
// server: they are this host's). A missing or unreadable file only means
// registering with the configured token.
func (a *Agent) loadState() {
	if a.cfg.StateFile == "" {
		return
	}
	b, err := os.ReadFile(a.cfg.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		a.log.Warn("cannot read the state file; using the configured token", "path", a.cfg.StateFile, "err", err)
		return
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		a.log.Warn("state file does not decode; using the configured token", "path", a.cfg.StateFile, "err", err)
		return
	}
	a.mu.Lock()
	a.xids = s.XIDs
	a.mu.Unlock()
	if k, ok := a.cfg.GPUs.(XIDKeeper); ok && len(s.XIDs) > 0 {
		k.RestoreXIDs(s.XIDs)
		a.log.Warn("critical XIDs kept from before the restart: these GPUs stay unhealthy until an operator clears them", "xids", s.XIDs)
	}
	if s.Credential == "" {
		a.log.Warn("state file holds no credential; using the configured token", "path", a.cfg.StateFile)
		return
	}
	if s.Server != a.server {
		a.log.Warn("state file is for another server; using the configured token", "path", a.cfg.StateFile, "state_server", s.Server)
		return
	}
	a.mu.Lock()
	a.token = s.Credential
	a.nodeID = s.NodeID
	a.mu.Unlock()
	a.log.Info("using the node credential from the state file", "path", a.cfg.StateFile, "node_id", s.NodeID)
}

// saveState writes the credential to the state file. The registration
// token is single-use, so a credential that cannot be saved is logged
// loudly: the next restart will need a new token.
func (a *Agent) saveState(nodeID int64, credential string) {
	if a.cfg.StateFile == "" {
		return
	}
	a.mu.Lock()
	a.nodeID = nodeID
	s := a.stateLocked(credential)
	a.mu.Unlock()
	if err := writeState(a.cfg.StateFile, s); err != nil {
		a.log.Error("cannot save the node credential; a restart will need a new registration token", "path", a.cfg.StateFile, "err", err)
	}
}

// stateLocked is the state to write: the credential given (the token in
// use when it is ""), and the critical XIDs last saved. The caller holds
// a.mu.
func (a *Agent) stateLocked(credential string) state {
	if credential == "" && a.token != a.cfg.Token {
		credential = a.token
	}
	return state{Server: a.server, NodeID: a.nodeID, Credential: credential, XIDs: a.xids}
}

// saveXIDs writes the GPUs' critical XIDs to the state file when they
// changed since last saved (a GPU raised one, or an operator cleared
// them): the file keeps them across restarts.
func (a *Agent) saveXIDs() {
	k, ok := a.cfg.GPUs.(XIDKeeper)
	if !ok || a.cfg.StateFile == "" {
		return
	}
	now := k.CriticalXIDs()
	a.mu.Lock()
	if sameXIDs(now, a.xids) {
		a.mu.Unlock()
		return
	}
	a.xids = now
	s := a.stateLocked("")
	a.mu.Unlock()
	if err := writeState(a.cfg.StateFile, s); err != nil {
		a.log.Error("cannot save the critical XIDs; a restart would forget them", "path", a.cfg.StateFile, "err", err)
	}
}

func sameXIDs(a, b map[string][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for u, xs := range a {
		if !slices.Equal(xs, b[u]) {
			return false
		}
	}
	return true
}

// writeState replaces path atomically, so a crash mid-write never leaves
// a truncated credential, and with mode 0600 from the first byte.
func writeState(path string, s state) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".suanli-agent-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails harmlessly after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
