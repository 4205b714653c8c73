package gpu

import (
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// profile is how one GPU model looks to NVML in a simulation: a go-nvml
// mock config (the closest one, renamed where the model has none of its
// own) and the sensor values go-nvml's mocks leave out.
type profile struct {
	slug string   // catalogue slug
	keys []string // SimulateModel picks the profile whose longest key the name contains
	cfg  gpus.Config

	powerLimitW, idleW uint32
	pcieGen            int
	nvlinks            int
	slowdownC          uint32
	smMHz, memMHz      uint32
	// ecc: ECC counters are readable; rowRemap: row remapping (Ampere and
	// later datacentre parts); retiredPages: page retirement (up to Volta).
	ecc, rowRemap, retiredPages bool

	driver, nvmlVersion string
	cuda                int
}

// noMIG is a copy of a mock config for a model without MIG.
func noMIG(c gpus.Config, name string, arch nvml.DeviceArchitecture, brand nvml.BrandType, memMiB uint64, major, minor int, pciID uint32) gpus.Config {
	c.Name, c.Architecture, c.Brand, c.MemoryMB = name, arch, brand, memMiB
	c.CudaMajor, c.CudaMinor, c.PciDeviceId = major, minor, pciID
	c.MIGProfiles = gpus.MIGProfileConfig{}
	return c
}

// renamed is a copy of a mock config under another name and memory size.
func renamed(c gpus.Config, name string, memMiB uint64) gpus.Config {
	c.Name, c.MemoryMB = name, memMiB
	return c
}

// The R550 driver of go-nvml's DGX A100/H100/H200 mocks, and the R560 one
// of its DGX B200 mock.
const (
	driver550, nvml550, cuda550 = "550.54.15", "12.550.54.15", 12040
	driver560, nvml560, cuda560 = "560.28.03", "12.560.28.03", 12060
)

// profiles are the models a simulation knows, one per catalogue slug.
var profiles = []profile{
	{
		slug: "rtx-3090", keys: []string{"RTX 3090"},
		cfg:         noMIG(gpus.A100_PCIE_40GB, "NVIDIA GeForce RTX 3090", nvml.DEVICE_ARCH_AMPERE, nvml.BRAND_GEFORCE, 24576, 8, 6, 0x220410DE),
		powerLimitW: 350, idleW: 28, pcieGen: 4, slowdownC: 93, smMHz: 1695, memMHz: 9751,
	},
	{
		slug: "rtx-4090", keys: []string{"RTX 4090"},
		cfg:         noMIG(gpus.A100_PCIE_40GB, "NVIDIA GeForce RTX 4090", nvml.DEVICE_ARCH_ADA, nvml.BRAND_GEFORCE, 24564, 8, 9, 0x268410DE),
		powerLimitW: 450, idleW: 30, pcieGen: 4, slowdownC: 90, smMHz: 2520, memMHz: 10501,
	},
	{
		slug: "l40s", keys: []string{"L40S"},
		cfg:         noMIG(gpus.A100_PCIE_40GB, "NVIDIA L40S", nvml.DEVICE_ARCH_ADA, nvml.BRAND_NVIDIA, 46068, 8, 9, 0x26B910DE),
		powerLimitW: 350, idleW: 80, pcieGen: 4, slowdownC: 88, smMHz: 2520, memMHz: 9001,
		ecc: true, rowRemap: true,
	},
	{
		slug: "v100-32g-sxm2", keys: []string{"V100"},
		cfg:         noMIG(gpus.A100_SXM4_40GB, "Tesla V100-SXM2-32GB", nvml.DEVICE_ARCH_VOLTA, nvml.BRAND_TESLA, 32768, 7, 0, 0x1DB510DE),
		powerLimitW: 300, idleW: 42, pcieGen: 3, nvlinks: 6, slowdownC: 87, smMHz: 1530, memMHz: 877,
		ecc: true, retiredPages: true,
	},
	{
		slug: "a100-40g-pcie", keys: []string{"A100-PCIE-40GB", "A100 PCIe", "A100-PCIE"},
		cfg:         gpus.A100_PCIE_40GB,
		powerLimitW: 250, idleW: 38, pcieGen: 4, slowdownC: 92, smMHz: 1410, memMHz: 1215,
		ecc: true, rowRemap: true,
	},
	{
		slug: "a100-40g-sxm", keys: []string{"A100-SXM4-40GB", "A100"},
		cfg:         renamed(gpus.A100_SXM4_40GB, "NVIDIA A100-SXM4-40GB", 40960),
		powerLimitW: 400, idleW: 55, pcieGen: 4, nvlinks: 12, slowdownC: 92, smMHz: 1410, memMHz: 1215,
		ecc: true, rowRemap: true,
	},
	{
		slug: "a100-80g-sxm", keys: []string{"A100-SXM4-80GB", "A100 80GB"},
		cfg:         gpus.A100_SXM4_80GB,
		powerLimitW: 400, idleW: 62, pcieGen: 4, nvlinks: 12, slowdownC: 92, smMHz: 1410, memMHz: 1593,
		ecc: true, rowRemap: true,
	},
	{
		slug: "h100-pcie", keys: []string{"H100 PCIe", "H100-PCIE"},
		cfg:         renamed(gpus.H100_SXM5_80GB, "NVIDIA H100 PCIe", 81559),
		powerLimitW: 350, idleW: 48, pcieGen: 5, slowdownC: 90, smMHz: 1755, memMHz: 1593,
		ecc: true, rowRemap: true,
	},
	{
		slug: "h100-sxm", keys: []string{"H100 80GB HBM3", "H100"},
		cfg:         gpus.H100_SXM5_80GB,
		powerLimitW: 700, idleW: 72, pcieGen: 5, nvlinks: 18, slowdownC: 90, smMHz: 1980, memMHz: 2619,
		ecc: true, rowRemap: true,
	},
	{
		slug: "h200-sxm", keys: []string{"H200"},
		cfg:         gpus.H200_SXM5_141GB,
		powerLimitW: 700, idleW: 76, pcieGen: 5, nvlinks: 18, slowdownC: 90, smMHz: 1980, memMHz: 3201,
		ecc: true, rowRemap: true,
	},
	{
		slug: "h20", keys: []string{"H20"},
		cfg:         renamed(gpus.H100_SXM5_80GB, "NVIDIA H20", 97871),
		powerLimitW: 400, idleW: 70, pcieGen: 5, nvlinks: 18, slowdownC: 90, smMHz: 1980, memMHz: 2619,
		ecc: true, rowRemap: true,
	},
	{
		slug: "b200", keys: []string{"B200"},
		cfg:         gpus.B200_SXM5_180GB,
		powerLimitW: 1000, idleW: 118, pcieGen: 5, nvlinks: 18, slowdownC: 90, smMHz: 1965, memMHz: 3996,
		ecc: true, rowRemap: true,
		driver: driver560, nvmlVersion: nvml560, cuda: cuda560,
	},
}

// genericProfile is the model SimulateModel falls back on for a name it
// does not know: a PCIe datacentre part without NVLink or MIG.
var genericProfile = profile{
	cfg:         noMIG(gpus.A100_PCIE_40GB, "", nvml.DEVICE_ARCH_AMPERE, nvml.BRAND_NVIDIA, 24576, 8, 6, 0),
	powerLimitW: 300, idleW: 40, pcieGen: 4, slowdownC: 90, smMHz: 1700, memMHz: 7000,
	ecc: true, rowRemap: true,
}

// systems are go-nvml's DGX mocks by name: how to build one, its GPU's
// mock config (kept as go-nvml has it, name included) and the profile of
// that GPU.
var systems = map[string]struct {
	build func(...gpus.Config) *server.Server
	cfg   gpus.Config
	slug  string
}{
	"dgxa100": {dgxa100.NewWithGPUs, gpus.A100_SXM4_40GB, "a100-40g-sxm"},
	"dgxh100": {dgxh100.NewWithGPUs, gpus.H100_SXM5_80GB, "h100-sxm"},
	"dgxh200": {dgxh200.NewWithGPUs, gpus.H200_SXM5_141GB, "h200-sxm"},
	"dgxb200": {dgxb200.NewWithGPUs, gpus.B200_SXM5_180GB, "b200"},
}

func profileBySlug(slug string) (profile, bool) {
	i := slices.IndexFunc(profiles, func(p profile) bool { return p.slug == slug })
	if i < 0 {
		return profile{}, false
	}
	return profiles[i], true
}

// closestProfile is the profile whose longest key the NVML name contains
// (so "H200" wins over "H20"), or the generic one.
func closestProfile(name string) profile {
	best, bestLen := genericProfile, 0
	up := strings.ToUpper(name)
	for _, p := range profiles {
		for _, k := range p.keys {
			if len(k) > bestLen && strings.Contains(up, strings.ToUpper(k)) {
				best, bestLen = p, len(k)
			}
		}
	}
	return best
}

// SimulatedModels returns the catalogue slugs SimulateCatalog knows.
func SimulatedModels() []string {
	out := make([]string, len(profiles))
	for i, p := range profiles {
		out[i] = p.slug
	}
	return out
}
