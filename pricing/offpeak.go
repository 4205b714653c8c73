package pricing

import "time"

// Shanghai is the market's clock: off-peak hours are Asia/Shanghai local
// time. China has had no daylight saving since 1991, so a fixed +08:00
// zone is exact and needs no tz database on the host.
var Shanghai = time.FixedZone("CST", 8*3600)

// Off-peak hours: 22:00–08:00 every day, and all of Saturday and Sunday.
const (
	OffpeakStartHour = 22
	OffpeakEndHour   = 8
)

// IsOffpeak reports whether the instant is in off-peak time.
func IsOffpeak(t time.Time) bool {
	l := t.In(Shanghai)
	if wd := l.Weekday(); wd == time.Saturday || wd == time.Sunday {
		return true
	}
	h := l.Hour()
	return h >= OffpeakStartHour || h < OffpeakEndHour
}

// nextBoundary returns the first instant after t at which off-peak status
// may change: the next local 00:00, 08:00 or 22:00.
func nextBoundary(t time.Time) time.Time {
	l := t.In(Shanghai)
	day := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, Shanghai)
	for _, b := range []time.Time{day.Add(OffpeakEndHour * time.Hour), day.Add(OffpeakStartHour * time.Hour), day.AddDate(0, 0, 1)} {
		if b.After(t) {
			return b
		}
	}
	return day.AddDate(0, 0, 1) // unreachable: midnight is always after t
}

// SplitOffpeak splits [start, end) into whole seconds at the peak and
// off-peak rates.
func SplitOffpeak(start, end time.Time) (peak, offpeak int64) {
	for t := start; t.Before(end); {
		next := nextBoundary(t)
		if next.After(end) {
			next = end
		}
		secs := int64(next.Sub(t) / time.Second)
		if IsOffpeak(t) {
			offpeak += secs
		} else {
			peak += secs
		}
		t = next
	}
	return peak, offpeak
}
