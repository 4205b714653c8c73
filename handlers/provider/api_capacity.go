package provider

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	"suanli/providers"
)

// The provider API's side of the portal's capacity page: the same
// providers.Service.Capacity, as JSON (web/parity_test.go pairs them).

// APINodeCapacity is one node's GPUs now, committed ahead and used lately.
type APINodeCapacity struct {
	NodeID       int64  `json:"node_id"`
	Name         string `json:"name"`
	DatacenterID int64  `json:"datacenter_id"`
	Status       string `json:"status"`
	// GPUs is how many the node has; Free, Rented (on-demand rentals),
	// Reserved (week or month rentals, or busy without a rental) and
	// Unhealthy split them.
	GPUs      int `json:"gpus"`
	Free      int `json:"free"`
	Rented    int `json:"rented"`
	Reserved  int `json:"reserved"`
	Unhealthy int `json:"unhealthy"`
	// Committed is the GPUs held by week or month rentals on each of the
	// next providers.CapacityDays days, day 0 being the capacity's from.
	Committed []int `json:"committed"`
	// Utilisation30dPct is rented GPU-seconds over available GPU-seconds
	// in the last 30 days (or since the node was added).
	Utilisation30dPct float64 `json:"utilisation_30d_pct"`
}

// APIProviderCapacity is GET /api/v1/provider/capacity (?provider_id):
// per node that is not removed, its GPUs free, rented and reserved now,
// committed over the next 30 days and used over the last 30, as the
// portal's capacity page shows them.
func (h *Handler) APIProviderCapacity(c echo.Context) error {
	pid, err := h.queryProvider(c)
	if err != nil {
		return err
	}
	capa, err := h.Providers.Capacity(c.Request().Context(), handlers.CurrentUser(c), pid)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiCapacity(pid, capa))
}

// apiCapacity is the capacity as the API shows it.
func apiCapacity(pid int64, capa *providers.Capacity) map[string]any {
	nodes := make([]APINodeCapacity, len(capa.Nodes))
	for i, n := range capa.Nodes {
		nodes[i] = APINodeCapacity{NodeID: n.Node.ID, Name: n.Node.Name, DatacenterID: n.Node.DatacenterID, Status: string(n.Node.Status),
			GPUs: n.Total, Free: n.Free, Rented: n.Rented, Reserved: n.Reserved, Unhealthy: n.Unhealthy,
			Committed: append([]int{}, n.Committed[:]...), Utilisation30dPct: n.Utilisation30dPct}
	}
	return map[string]any{"provider_id": pid, "from": capa.From.UTC(), "days": providers.CapacityDays, "nodes": nodes}
}
