package models

import "suanli/pricing"

// Rate is what the rental pays per second, at the prices fixed when it
// started (or last changed). In no-GPU mode that is the flat hourly
// price, with the same off-peak and student discounts and no SLA
// surcharge (no GPUs, nothing the SLA covers).
func (r *Rental) Rate() pricing.Rate {
	if r.NoGPU {
		return pricing.Rate{PricePerGPUHourFen: r.NoGPUPricePerHourFen, GPUs: 1, OffpeakPct: r.OffpeakPct, StudentPct: r.StudentPct}
	}
	return pricing.Rate{PricePerGPUHourFen: r.PricePerGPUHourFen, GPUs: r.GPUs, OffpeakPct: r.OffpeakPct, StudentPct: r.StudentPct, SLASurchargePct: r.SLASurchargePct}
}
