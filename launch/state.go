package launch

import (
	"fmt"
	"strings"
	"time"

	"suanli/locales"
	"suanli/models"
	"suanli/rentals"
)

// State is where a rental is, as a launcher's state machine follows it:
// the rental's status, but host_offline while a provisioning or running
// rental's node has missed its heartbeats, and released once released.
type State string

// The states. pending → provisioning → running ⇄ host_offline; running →
// migrating → running (a fault moved it); running → stopping → stopped →
// (start) provisioning; running → interrupted → provisioning (a bid);
// failed and released are final.
const (
	StatePending      State = "pending"
	StateProvisioning State = "provisioning"
	StateRunning      State = "running"
	StateHostOffline  State = "host_offline"
	StateMigrating    State = "migrating"
	StateStopping     State = "stopping"
	StateStopped      State = "stopped"
	StateInterrupted  State = "interrupted"
	StateFailed       State = "failed"
	StateReleased     State = "released"
)

// States are every state, in the order of a rental's life.
var States = []State{StatePending, StateProvisioning, StateRunning, StateHostOffline, StateMigrating, StateStopping,
	StateStopped, StateInterrupted, StateFailed, StateReleased}

// StateOf is the rental's state. A node is offline once the health pass
// marked it silent (models.NodeSilent: no heartbeat for the service's
// SilentAfter); the pass then moves the rental to a healthy node
// (migrating) where one is free.
func StateOf(d *rentals.RentalDetail) State {
	st := State(d.PublicStatus())
	if (st == StateRunning || st == StateProvisioning) && d.Node != nil && d.Node.Health == models.NodeSilent {
		return StateHostOffline
	}
	return st
}

// StatusMessage is one sentence, in English, saying why the rental is
// in its state: why it failed, stopped or was interrupted, what its
// provisioning is doing, since when its node is silent.
func StatusMessage(d *rentals.RentalDetail) string {
	r := &d.Rental
	switch StateOf(d) {
	case StatePending:
		return "Waiting to be provisioned: GPUs are reserved and the node's agent is being asked to check them."
	case StateProvisioning:
		if p := d.Progress; p != nil {
			msg := fmt.Sprintf("Provisioning: %s %d%%", p.Stage, p.Pct)
			if p.Detail != "" {
				msg += " (" + p.Detail + ")"
			}
			return msg + "."
		}
		return "Provisioning: the GPUs are being checked through NVML before the container starts."
	case StateRunning:
		if d.Node != nil {
			return sentence("Running on node " + d.Node.Name + since(r.RunningSince))
		}
		return sentence("Running" + since(r.RunningSince))
	case StateHostOffline:
		msg := "The node has missed its heartbeats"
		if d.Node != nil && d.Node.LastHeartbeatAt != nil {
			msg += " since " + d.Node.LastHeartbeatAt.UTC().Format(time.RFC3339)
		}
		return msg + "; the rental moves to a healthy node when one has the GPUs free, and the downtime is not billed."
	case StateMigrating:
		return "Moving to a healthy node after an incident" + lastEvent(d) + "; the downtime is not billed."
	case StateStopping:
		return sentence("Stopping: the node is stopping the container" + reason(r.StopReason))
	case StateStopped:
		return sentence("Stopped" + reason(r.StopReason) + "; the volume is kept (billed as storage) and the rental can start again")
	case StateInterrupted:
		return sentence("Interrupted" + reason(r.InterruptMsg.Or(locales.EN, r.InterruptReason)) + "; it resumes when GPUs are free at its bid")
	case StateFailed:
		return sentence("Failed" + reason(r.FailureMsg.Or(locales.EN, r.Failure)))
	case StateReleased:
		return "Released: the container is deleted, and the volume too if asked."
	}
	return sentence("Status " + string(r.Status))
}

// reason is ": why", or "" when nothing says why.
func reason(why string) string {
	why = strings.TrimRight(strings.TrimSpace(why), ".")
	if why == "" {
		return ""
	}
	return ": " + why
}

// since is " since T", or "".
func since(t *time.Time) string {
	if t == nil {
		return ""
	}
	return " since " + t.UTC().Format(time.RFC3339)
}

// lastEvent is ": the detail of the rental's last event", or "".
func lastEvent(d *rentals.RentalDetail) string {
	if len(d.Events) == 0 {
		return ""
	}
	return reason(d.Events[len(d.Events)-1].Detail)
}

// sentence ends s with a full stop.
func sentence(s string) string { return s + "." }
