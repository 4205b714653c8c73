package pricing

import (
	"regexp"
	"strconv"
	"strings"
)

// FenToYuanString writes fen as a plain decimal yuan amount ("35.5", "40").
func FenToYuanString(fen int64) string {
	s := strconv.FormatInt(fen/100, 10)
	if c := fen % 100; c != 0 {
		s += strings.TrimRight("."+strconv.FormatInt(100+c, 10)[1:], "0")
	}
	return s
}

var yuanRe = regexp.MustCompile(`^[0-9]{1,7}(\.[0-9]{1,2})?$`)

// ParseYuan parses a non-negative yuan amount with at most two decimals
// into fen, without floating point.
func ParseYuan(s string) (int64, bool) {
	if !yuanRe.MatchString(s) {
		return 0, false
	}
	whole, frac, _ := strings.Cut(s, ".")
	w, _ := strconv.ParseInt(whole, 10, 64)
	for len(frac) < 2 {
		frac += "0"
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	return w*100 + f, true
}
