package rentals

import "testing"

// SetMeterBatch makes meter batches of about n rentals until the test
// ends: a small fleet then makes several batches, which run at once on
// PostgreSQL. A test that calls it must not run in parallel.
func SetMeterBatch(tb testing.TB, n int) {
	old := meterBatch
	meterBatch = map[string]int{"postgres": n, "sqlite": n}
	tb.Cleanup(func() { meterBatch = old })
}
