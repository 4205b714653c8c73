package views

import "testing"

func TestYuan(t *testing.T) {
	cases := map[int64]string{0: "¥0.00", 5: "¥0.05", 3400: "¥34.00", 123456: "¥1,234.56", 2050000: "¥20,500.00", -150: "−¥1.50"}
	for fen, want := range cases {
		if got := Yuan(fen); got != want {
			t.Errorf("Yuan(%d) = %q, want %q", fen, got, want)
		}
	}
	if got := YuanWhole(2050049); got != "¥20,500" {
		t.Errorf("YuanWhole = %q", got)
	}
	if got := Int(1234567); got != "1,234,567" {
		t.Errorf("Int = %q", got)
	}
}
