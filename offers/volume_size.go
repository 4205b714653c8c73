package offers

import (
	"suanli/apperr"
	"suanli/models"
)

// Volume sizes, in GB. A rental that names no volume gets a new one of
// DefaultVolumeGB (or the offer's disk, if smaller); quotes price the
// same one.
const (
	DefaultVolumeGB = 50
	MaxVolumeGB     = 10000
)

// MaxVolumeGBOf is the largest volume an offer takes: its disk, if it
// states one.
func MaxVolumeGBOf(o *models.Offer) int {
	if o.DiskGB > 0 {
		return min(MaxVolumeGB, o.DiskGB)
	}
	return MaxVolumeGB
}

// VolumeSize checks a requested size against the offer's disk; 0 is the
// default size.
func VolumeSize(gb int, o *models.Offer) (int, error) {
	most := MaxVolumeGBOf(o)
	if gb == 0 {
		return min(DefaultVolumeGB, most), nil
	}
	if gb < 1 || gb > most {
		return 0, apperr.Field("volume_gb", "err.volume_size", most)
	}
	return gb, nil
}
