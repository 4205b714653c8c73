package images

import (
	"strconv"
	"strings"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// cudaVersion is a CUDA version's major and minor number.
type cudaVersion struct{ major, minor int }

// parseCUDA reads "12", "12.4" or "12.4.1" (the patch is ignored: the
// driver's CUDA version, as NVML reports it, has none).
func parseCUDA(s string) (cudaVersion, bool) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) == 0 || len(parts) > 3 {
		return cudaVersion{}, false
	}
	var v [2]int
	for i := 0; i < len(parts) && i < 2; i++ {
		n, err := strconv.Atoi(parts[i])
		if err != nil || n < 0 || n > 999 {
			return cudaVersion{}, false
		}
		v[i] = n
	}
	return cudaVersion{v[0], v[1]}, true
}

func (v cudaVersion) newerThan(o cudaVersion) bool {
	return v.major > o.major || v.major == o.major && v.minor > o.minor
}

func (v cudaVersion) String() string { return strconv.Itoa(v.major) + "." + strconv.Itoa(v.minor) }

// CheckNode says whether a node whose driver supports CUDA driverCUDA (as
// NVML reports it, "12.4"; "" when the node never reported one) can run
// the image: an image whose CUDA runtime is newer than the driver's is
// refused, naming both versions. A node that has not said which it
// supports is not judged here (its agent checks the image after pulling
// it and refuses the launch, naming both versions). An image with no known
// CUDA requirement (none, or a custom image not yet inspected) runs
// anywhere. The error is EIMAGEINCOMPATIBLE on the field "image".
func CheckNode(choice Choice, driverCUDA string) error {
	need, ok := parseCUDA(choice.CUDAVersion)
	if !ok || choice.CUDAVersion == "" {
		return nil
	}
	have, ok := parseCUDA(driverCUDA)
	if !ok {
		// Not judged: a node that has not said which CUDA its driver
		// supports (a new node, one without NVML) is checked by its agent,
		// which refuses the launch naming both versions.
		return nil
	}
	if need.newerThan(have) {
		return apperr.FieldCode(apperr.EIMAGEINCOMPATIBLE, "image", "images.err.cuda_too_new", need.String(), have.String())
	}
	return nil
}

// Compatible reports whether CheckNode lets the image run on a node
// whose driver supports driverCUDA.
func Compatible(choice Choice, driverCUDA string) bool { return CheckNode(choice, driverCUDA) == nil }

// CheckOfferNode is CheckNode for the node of the offer, with the CUDA
// version its driver last reported; a custom image's CUDA version is the
// one the node found in it (Resolve reads it).
func CheckOfferNode(tx *gorm.DB, offer models.Offer, choice Choice) error {
	drivers, err := models.NodeCUDADriverVersions(tx, []int64{offer.NodeID})
	if err != nil {
		return err
	}
	return CheckNode(choice, drivers[offer.NodeID])
}

// CompatibleNodes returns those of the nodes that can run the image (see
// CheckNode), in the order given, so that provisioning skips the others.
// For a custom image, a node that has it locally is judged by the CUDA
// version it found in it.
func CompatibleNodes(tx *gorm.DB, nodeIDs []int64, choice Choice) ([]int64, error) {
	drivers, err := models.NodeCUDADriverVersions(tx, nodeIDs)
	if err != nil {
		return nil, err
	}
	local := map[int64]string{}
	if choice.Custom {
		imgs, err := models.NodeImagesOf(tx, nodeIDs)
		if err != nil {
			return nil, err
		}
		want := familiar(choice.Reference)
		for _, im := range imgs {
			if familiar(im.Ref) == want && im.CUDAVersion != "" {
				local[im.NodeID] = im.CUDAVersion
			}
		}
	}
	out := make([]int64, 0, len(nodeIDs))
	for _, id := range nodeIDs {
		c := choice
		if v, ok := local[id]; ok {
			c.CUDAVersion = v
		}
		if Compatible(c, drivers[id]) {
			out = append(out, id)
		}
	}
	return out, nil
}
