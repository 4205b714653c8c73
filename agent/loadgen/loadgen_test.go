package loadgen

import (
	"slices"
	"testing"
)

func TestSysfsPCIAddress(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:18:00.0":  "0000:18:00.0",
		"00000001:AB:00.0":  "0001:ab:00.0",
		"0000:3b:00.0":      "0000:3b:00.0",
		"":                  "",
		"GPU-abc":           "",
		"00000000:18:00":    "",
		"0000000g:18:00.0":  "",
		"../../etc:18:00.0": "",
	} {
		if got := sysfsPCIAddress(in); got != want {
			t.Errorf("sysfsPCIAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"0-3,8,10-11\n": {0, 1, 2, 3, 8, 10, 11},
		"5":             {5},
		"":              nil,
		"3-1":           nil,
		"a-b":           nil,
	} {
		got, ok := parseCPUList(in)
		if !slices.Equal(got, want) || ok != (want != nil) {
			t.Errorf("parseCPUList(%q) = %v %v, want %v", in, got, ok, want)
		}
	}
}

// Older nccl-tests print no root column; a row that is not numbers is
// skipped; the plateau is the best size from 256 MiB on, or the best of a
// sweep that stopped short of it.
func TestAllReduceSweepRows(t *testing.T) {
	out := []byte(`#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
   268435456      67108864     float     sum   1316.4  203.92  356.86  0e+00   1316.1  203.96  356.94  0e+00
   536870912     134217728     float     sum   2700.0  198.84  347.97  0e+00   2700.0  198.84  347.97  0e+00
  1073741824     268435456     float     sum    N/A     N/A     N/A    N/A      N/A     N/A     N/A    N/A
`)
	sweep := parseAllReduceSweep(out)
	if len(sweep) != 2 || sweep[0].Bytes != 256<<20 || sweep[0].BusBW != (356.86+356.94)/2 {
		t.Fatalf("sweep %+v", sweep)
	}
	if p := plateau(sweep); p.Bytes != 256<<20 {
		t.Errorf("plateau %+v, want 256 MiB's", p)
	}
	small := []SweepPoint{{Bytes: 1 << 20, BusBW: 40}, {Bytes: 2 << 20, BusBW: 60}}
	if p := plateau(small); p.Bytes != 2<<20 {
		t.Errorf("plateau of a short sweep %+v", p)
	}
}
