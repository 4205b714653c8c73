package pricing

import (
	"math/big"
	"time"
)

// AccrualDen is the unit of a metering carry: amounts accrue exactly in
// 1/AccrualDen fen (3600 s × three percentage factors), so no sub-fen is
// ever lost or invented, however many steps a rental is billed in.
const AccrualDen = 3600 * 100 * 100 * 100

// Rate is what a running rental pays: the agreed terms, its GPUs, whether
// the student discount applies and its SLA surcharge.
type Rate struct {
	PricePerGPUHourFen int64
	GPUs               int
	OffpeakPct         int
	StudentPct         int // 0 unless the renter gets student prices
	SLASurchargePct    int
}

// Accrue bills [from, to) at the rate: each second at the peak or
// off-peak price of the instant it falls in, discounts multiplied, the SLA
// surcharge on top. Both ends are truncated to the second (the meter bills
// whole seconds). carry is the remainder of earlier steps in 1/AccrualDen
// fen; Accrue returns the whole fen to post now and the new remainder, so
// billing [a,b) then [b,c) posts exactly what [a,c) posts.
func Accrue(r Rate, from, to time.Time, carry int64) (fen, newCarry int64) {
	from, to = from.Truncate(time.Second), to.Truncate(time.Second)
	if !to.After(from) {
		return 0, carry
	}
	peakS, offS := SplitOffpeak(from, to)
	// In 1/AccrualDen fen: price × gpus × (100+sla) × (peak × 100 × (100−stu) + off × (100−off) × (100−stu)).
	peak := new(big.Int).Mul(big.NewInt(peakS), big.NewInt(int64(100*(100-r.StudentPct))))
	off := new(big.Int).Mul(big.NewInt(offS), big.NewInt(int64((100-r.OffpeakPct)*(100-r.StudentPct))))
	num := new(big.Int).Add(peak, off)
	num.Mul(num, big.NewInt(r.PricePerGPUHourFen*int64(r.GPUs)*int64(100+r.SLASurchargePct)))
	num.Add(num, big.NewInt(carry))
	q, m := new(big.Int).QuoRem(num, big.NewInt(AccrualDen), new(big.Int))
	return q.Int64(), m.Int64()
}

// HourFen is what the rate costs for the next hour from t (rounded up to
// the fen): the balance a rental needs to start, and the low-balance mark.
func HourFen(r Rate, t time.Time) int64 {
	fen, carry := Accrue(r, t, t.Add(time.Hour), 0)
	if carry > 0 {
		fen++
	}
	return fen
}
