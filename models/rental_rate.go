package models

import "suanli/pricing"

// Rate is what the rental pays per second, at the prices fixed when it
// started (or last changed).
func (r *Rental) Rate() pricing.Rate {
	return pricing.Rate{PricePerGPUHourFen: r.PricePerGPUHourFen, GPUs: r.GPUs, OffpeakPct: r.OffpeakPct, StudentPct: r.StudentPct, SLASurchargePct: r.SLASurchargePct}
}
