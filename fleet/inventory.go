package fleet

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/gpu"
	"suanli/models"
	"suanli/models/supply"
)

// Listing notes of offers that wait for their node.
const (
	NoteAwaitingReport = "waiting for the node's agent to report its GPUs"
)

// NodeInventory is what the node's agent has reported: how many GPUs,
// the NVML name of the first, and how many of the node's model are healthy.
type NodeInventory struct {
	GPUs, Healthy int
	Name          string
}

// InventoryOf reads, in tx, what the node's agent has reported (see
// NodeInventory).
func InventoryOf(tx *gorm.DB, n *models.Node) (NodeInventory, error) {
	gpus, err := supply.GPUsOfNode(tx, n.ID)
	if err != nil {
		return NodeInventory{}, err
	}
	return inventoryOf(n, gpus), nil
}

// inventoryOf sums up a node's GPUs (in index order).
func inventoryOf(n *models.Node, gpus []models.GPU) NodeInventory {
	inv := NodeInventory{GPUs: len(gpus)}
	for _, g := range gpus {
		if inv.Name == "" {
			inv.Name = g.Name
		}
		if g.Health == models.GPUHealthy && g.GPUModel == n.GPUModel {
			inv.Healthy++
		}
	}
	return inv
}

// Mismatch is the refusal of an offer for another model than the node's.
func Mismatch(n *models.Node, inv NodeInventory, slug string) *apperr.Error {
	return apperr.Field("gpu", "providers.err.gpu_mismatch", n.Name, inv.GPUs, inv.Name, n.GPUModel, slug)
}

// ListingOf decides whether a listed offer can show now: its node's agent
// has reported GPUs of its model, is connected, and at least one of them
// passes its NVML checks. It returns awaiting and the note that says what
// is missing.
func ListingOf(tx *gorm.DB, o *models.Offer, n *models.Node) (bool, string, error) {
	inv, err := InventoryOf(tx, n)
	if err != nil {
		return false, "", err
	}
	switch {
	case n.GPUModel == "" && inv.GPUs == 0:
		if n.Health == models.NodeNoNVML {
			return true, "the node's agent cannot read NVML", nil
		}
		if n.LastHeartbeatAt != nil {
			return true, "the node reports GPUs that are not in the catalogue", nil
		}
		return true, NoteAwaitingReport, nil
	case n.GPUModel != o.GPUModel:
		return true, Mismatch(n, inv, o.GPUModel).Message, nil
	case n.Health != models.NodeHealthy:
		return true, fmt.Sprintf("the node's agent is not connected (%s)", n.Health), nil
	case inv.Healthy == 0:
		return true, "no GPU of the node passes its NVML checks", nil
	}
	return false, "", nil
}

// SettleAwaitingOffers re-evaluates, in tx, the offers on the node that
// wait for it: those whose node now shows healthy GPUs of their model are
// listed (the offers version is bumped); the others get a note saying
// what is still missing. The heartbeat calls it after recording GPUs.
func SettleAwaitingOffers(tx *gorm.DB, nodeID int64, now time.Time) error {
	offers, err := supply.OffersAwaitingNode(tx, nodeID)
	if err != nil {
		return err
	}
	if len(offers) == 0 {
		return nil
	}
	n, err := supply.NodeByIDTx(tx, nodeID)
	if err != nil {
		return err
	}
	bump := false
	for i := range offers {
		o := &offers[i]
		awaiting, note, err := ListingOf(tx, o, &n)
		if err != nil {
			return err
		}
		if awaiting == o.AwaitingNode && note == o.ListingNote {
			continue
		}
		if err := supply.SetOfferListing(tx, o.ID, awaiting, note, now); err != nil {
			return err
		}
		// Either way the public list changes: the offer joins or leaves it.
		bump = true
		if !awaiting {
			slog.Info("offer listed: node reported matching GPUs", "offer", o.ID, "node", nodeID, "gpu", o.GPUModel)
		}
	}
	if bump {
		return models.OffersChanged(tx, models.OfferScope{Nodes: []int64{nodeID}})
	}
	return nil
}

// DetectGPUModel names the catalogue model of an NVML device from its
// name, and its memory where names are ambiguous: the longest matching
// name fragment wins ("H200" over "H20"), and among models whose names
// match equally, the one whose memory is nearest.
func DetectGPUModel(name string, memoryMiB int64) (string, bool) {
	up := strings.ToUpper(name)
	best, bestLen := "", 0
	bestDist := 0.0
	memGB := float64(memoryMiB) / 1024
	for _, m := range catalog.GPUModels() {
		k := strings.ToUpper(m.NVMLNameContains)
		if k == "" || !strings.Contains(up, k) {
			continue
		}
		dist := 0.0
		if memoryMiB > 0 {
			dist = memGB - float64(m.VRAMGB)
			if dist < 0 {
				dist = -dist
			}
			// A memory size far off the model's is another variant
			// (a 16 GB V100 is not the 32 GB one).
			if dist > 0.2*float64(m.VRAMGB) {
				continue
			}
		}
		if len(k) > bestLen || (len(k) == bestLen && dist < bestDist) {
			best, bestLen, bestDist = m.Slug, len(k), dist
		}
	}
	return best, best != ""
}

// DetectNodeModel names the node's model from its agent's inventory: the
// model most of its GPUs are. "" when none is a catalogue model.
func DetectNodeModel(host gpu.Host) string {
	count := map[string]int{}
	best := ""
	for _, g := range host.GPUs {
		if s, ok := DetectGPUModel(g.Name, int64(g.MemoryTotalMiB)); ok {
			count[s]++
			if count[s] > count[best] {
				best = s
			}
		}
	}
	return best
}
