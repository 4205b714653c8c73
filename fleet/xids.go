package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/audit"
	"suanli/locales"
	"suanli/models/supply"
)

// ClearXIDs asks a node's agent to forget the critical XIDs seen on one
// of its GPUs (by UUID), once an operator has dealt with them (reset the
// GPU, rebooted the host): the agent keeps them, across restarts, until
// then, and the GPU stays unhealthy. The request is audited with the
// actor in ctx (none: the operator's console) and the reason, which is
// required. It returns the
// agent task's id; the GPU passes again on the first heartbeat after the
// agent ran it, unless it raises a new one.
func (f *Fleet) ClearXIDs(ctx context.Context, nodeID int64, uuid, reason string) (int64, error) {
	uuid, reason = strings.TrimSpace(uuid), strings.TrimSpace(reason)
	switch {
	case uuid == "":
		return 0, &apperr.Error{Code: apperr.EINVALID, Field: "gpu", Message: "name the GPU by its UUID"}
	case reason == "":
		return 0, &apperr.Error{Code: apperr.EINVALID, Field: "reason", Message: "say why the XIDs may be cleared (what was done about them)"}
	}
	now := f.DB.Now().UTC()
	var taskID int64
	err := f.DB.Tx(ctx, func(tx *gorm.DB) error {
		if _, err := supply.NodeByIDTx(tx, nodeID); errors.Is(err, gorm.ErrRecordNotFound) {
			return apperr.NotFound("node")
		} else if err != nil {
			return err
		}
		g, err := supply.NodeGPUByUUID(tx, nodeID, uuid)
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return &apperr.Error{Code: apperr.ENOTFOUND, Field: "gpu", Message: fmt.Sprintf("node %d has no GPU %s", nodeID, uuid)}
		}
		if err != nil {
			return err
		}
		// Each request is a task of its own: an XID raised after an
		// earlier clear needs a new one.
		key := fmt.Sprintf("clear-xids/n%d/g%d/%d", nodeID, g.ID, now.UnixNano())
		taskID, err = EnqueueTask(tx, nodeID, nil, key, agent.Task{Kind: agent.TaskClearXIDs, GPUUUIDs: []string{g.UUID}}, now)
		if err != nil {
			return err
		}
		detail := fmt.Sprintf("GPU %s of node %d: critical XIDs cleared (%s)", g.UUID, nodeID, reason)
		return audit.Record(ctx, tx, audit.GPUXIDsCleared, fmt.Sprintf("node:%d", nodeID), nil, detail,
			locales.M("audit.xids_cleared", g.UUID, nodeID, reason))
	})
	if err == nil && f.Hub != nil {
		f.Hub.Signal(NodeKey(nodeID))
	}
	return taskID, err
}
