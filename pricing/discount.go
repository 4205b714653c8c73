// Package pricing is pure price arithmetic in integer fen: discounts now;
// per-second quotes and off-peak windows build on it.
package pricing

// Discounted applies percentage discounts multiplicatively to a price in
// fen (base × (1 − a) × (1 − b) …), rounding half up once at the end so
// that chained discounts do not lose fen to intermediate rounding.
func Discounted(fen int64, pcts ...int) int64 {
	num, den := fen, int64(1)
	for _, p := range pcts {
		num *= int64(100 - p)
		den *= 100
	}
	return (num + den/2) / den
}
