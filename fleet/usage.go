package fleet

import (
	"context"
	"time"

	"suanli/models"
	"suanli/models/supply"
)

// SampleRetention is how long rented GPUs' telemetry samples are kept
// and shown (the purge job deletes older ones every hour).
const SampleRetention = 24 * time.Hour

// GPUUsage is one GPU of a rental with its telemetry samples from while
// the rental held it, oldest first: those of the last SampleRetention,
// one every 30 s or so while it is rented.
type GPUUsage struct {
	GPU     models.GPU
	Samples []models.GPUSample
}

// RentalUsage returns the telemetry history of a rental's GPUs, gpus
// (those it holds, or held last: rentals.RentalDetail.GPUs), in that
// order; a GPU without samples yet has none.
func (f *Fleet) RentalUsage(ctx context.Context, rentalID int64, gpus []models.GPU) ([]GPUUsage, error) {
	ids := make([]int64, 0, len(gpus))
	for _, g := range gpus {
		ids = append(ids, g.ID)
	}
	samples, err := supply.RentalGPUSamples(ctx, f.DB, rentalID, ids, f.DB.Now().UTC().Add(-SampleRetention))
	if err != nil {
		return nil, err
	}
	by := map[int64][]models.GPUSample{}
	for _, s := range samples {
		by[s.GPUID] = append(by[s.GPUID], s)
	}
	out := make([]GPUUsage, 0, len(gpus))
	for _, g := range gpus {
		out = append(out, GPUUsage{GPU: g, Samples: by[g.ID]})
	}
	return out, nil
}
