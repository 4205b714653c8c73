package launch

import (
	"fmt"
	"strconv"
	"strings"

	"suanli/apperr"
	"suanli/catalog"
)

// MaxTypeGPUs is the most GPUs an instance type names (one rental's GPUs
// are all on one node).
const MaxTypeGPUs = 64

// InstanceType is a stable name for "N GPUs of one catalogue model on one
// node", independent of offers and their ids: "<gpu slug>.<N>x", such as
// h100-sxm.2x. Any offer of the model whose MaxGPUs is at least N serves
// it.
type InstanceType struct {
	// GPU is the catalogue slug of the model.
	GPU string
	// GPUs is how many, from 1 to MaxTypeGPUs.
	GPUs int
}

// String is the type's name.
func (t InstanceType) String() string { return t.GPU + "." + strconv.Itoa(t.GPUs) + "x" }

// ParseInstanceType reads a type's name; anything else (a model the
// catalogue does not know, a count out of range) is an EINVALID error on
// "instance_type".
func ParseInstanceType(s string) (InstanceType, error) {
	bad := func(why string) error {
		return apperr.Invalid("instance_type", fmt.Sprintf("%s: want <gpu>.<N>x, such as h100-sxm.2x (GET /api/v1/instance-types lists them)", why))
	}
	slug, count, ok := cutLast(s, ".")
	if !ok || !strings.HasSuffix(count, "x") {
		return InstanceType{}, bad("not an instance type")
	}
	n, err := strconv.Atoi(strings.TrimSuffix(count, "x"))
	if err != nil || n < 1 || n > MaxTypeGPUs || strconv.Itoa(n)+"x" != count {
		return InstanceType{}, bad(fmt.Sprintf("the GPU count must be 1 to %d", MaxTypeGPUs))
	}
	if _, ok := catalog.GPUModelBySlug(slug); !ok {
		return InstanceType{}, bad("no GPU model " + strconv.Quote(clip(slug)) + " in the catalogue")
	}
	return InstanceType{GPU: slug, GPUs: n}, nil
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
