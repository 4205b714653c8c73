package views

import (
	"strconv"
	"strings"
)

// Yuan formats fen as "¥1,234.56" (the same in both languages).
func Yuan(fen int64) string {
	neg := fen < 0
	if neg {
		fen = -fen
	}
	s := "¥" + thousands(fen/100) + "." + strconv.FormatInt(100+fen%100, 10)[1:]
	if neg {
		return "−" + s
	}
	return s
}

// YuanWhole formats fen rounded to whole yuan: "¥20,500".
func YuanWhole(fen int64) string {
	return "¥" + thousands((fen+50)/100)
}

// Int formats an integer with thousands separators.
func Int(n int) string {
	if n < 0 {
		return "−" + thousands(int64(-n))
	}
	return thousands(int64(n))
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Num formats a figure with at most one decimal, dropping ".0".
func Num(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// MS formats a latency in milliseconds.
func MS(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64) + " ms"
}

// Name is a name in both languages, as records store them.
type Name struct{ ZH, EN string }

// In returns the name in lang: English for "en" when there is one, else
// Chinese.
func (n Name) In(lang string) string {
	if lang == "en" && n.EN != "" {
		return n.EN
	}
	return n.ZH
}

// Bytes formats a size in bytes with binary units: "512 B", "3.4 MiB".
func Bytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}
