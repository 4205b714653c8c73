package agent

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// state is what the state file holds: the node credential, and the server
// it is valid for, so that pointing the agent at another server does not
// send it this one's credential.
type state struct {
	Server     string `json:"server"`
	NodeID     int64  `json:"node_id,omitempty"`
	Credential string `json:"credential"`
}

// loadState takes the credential from the state file, if there is one for
// this server. A missing or unreadable file only means registering with
// the configured token.
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
	if err := json.Unmarshal(b, &s); err != nil || s.Credential == "" {
		a.log.Warn("state file holds no credential; using the configured token", "path", a.cfg.StateFile, "err", err)
		return
	}
	if s.Server != a.server {
		a.log.Warn("state file is for another server; using the configured token", "path", a.cfg.StateFile, "state_server", s.Server)
		return
	}
	a.mu.Lock()
	a.token = s.Credential
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
	if err := writeState(a.cfg.StateFile, state{Server: a.server, NodeID: nodeID, Credential: credential}); err != nil {
		a.log.Error("cannot save the node credential; a restart will need a new registration token", "path", a.cfg.StateFile, "err", err)
	}
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
