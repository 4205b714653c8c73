package pricing

import "testing"

func TestDiscountedMultipliesAndRoundsOnce(t *testing.T) {
	cases := []struct {
		fen  int64
		pcts []int
		want int64
	}{
		{3400, nil, 3400},
		{3400, []int{20}, 2720},
		{3400, []int{20, 10}, 2448}, // 3400 × 0.8 × 0.9
		{498, []int{30, 20}, 279},   // 278.88 rounds up
		{1, []int{50}, 1},           // 0.5 rounds half up
		{1, []int{90}, 0},
		{100, []int{0, 0}, 100},
	}
	for _, c := range cases {
		if got := Discounted(c.fen, c.pcts...); got != c.want {
			t.Errorf("Discounted(%d, %v) = %d, want %d", c.fen, c.pcts, got, c.want)
		}
	}
}
