// Package images owns which container image a rental runs: the platform
// catalogue, the images an offer offers (its provider's choice of
// catalogue images, and whether renters may bring their own), resolving
// what a renter asked for into a reference the agent pulls, and the CUDA
// rule — an image whose CUDA runtime is newer than the CUDA version a
// node's driver supports is refused on that node, naming both versions.
//
// What an offer offers: the catalogue images listed for it
// (models.ImagesOfOffer holds the rule: none listed means every
// catalogue image), in catalogue order; the first is its default. Custom
// images (any registry reference with a tag or digest) only where the
// offer's CustomImages allows them.
package images

import (
	"context"
	"strings"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// Image is a catalogue image as an offer shows it.
type Image struct {
	models.Image
	// Cached is true when the offer's node reports the image locally: a
	// rental starts without pulling it. Catalogue lists leave it false.
	Cached bool
	// Compatible is false when the offer's node cannot run it (CheckNode:
	// its driver supports an older CUDA, or said nothing). Catalogue
	// lists leave it true.
	Compatible bool
	// DriverCUDA is the CUDA version the offer's node's driver supports,
	// as it last reported it ("" when it never did, and in catalogue
	// lists).
	DriverCUDA string
}

// Catalogue returns the platform's catalogue, in catalogue order.
func Catalogue(ctx context.Context, db *models.DB) ([]Image, error) {
	imgs, err := models.CatalogueImages(db.R.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	out := make([]Image, len(imgs))
	for i, im := range imgs {
		out[i] = Image{Image: im, Compatible: true}
	}
	return out, nil
}

// ForOffer returns the catalogue images the offer offers, in catalogue
// order (the first is the default), each marked Cached when the offer's
// node reports it locally (its size then comes from the node when the
// catalogue has none) and Compatible when the node's CUDA driver can run
// it. An unknown offer is ENOTFOUND.
func ForOffer(ctx context.Context, db *models.DB, offerID int64) ([]Image, error) {
	tx := db.R.WithContext(ctx)
	nodeID, err := models.OfferNodeID(tx, offerID)
	if err != nil {
		return nil, err
	}
	imgs, err := models.ImagesOfOffer(tx, offerID)
	if err != nil {
		return nil, err
	}
	local, err := models.NodeImagesOf(tx, []int64{nodeID})
	if err != nil {
		return nil, err
	}
	drivers, err := models.NodeCUDADriverVersions(tx, []int64{nodeID})
	if err != nil {
		return nil, err
	}
	byRef := make(map[string]models.NodeImage, len(local))
	for _, l := range local {
		byRef[familiar(l.Ref)] = l
	}
	out := make([]Image, len(imgs))
	for i, im := range imgs {
		out[i] = Image{Image: im, Compatible: Compatible(choiceOf(im), drivers[nodeID]), DriverCUDA: drivers[nodeID]}
		if l, ok := byRef[familiar(im.Reference)]; ok {
			out[i].Cached = true
			if im.SizeBytes == nil && l.SizeBytes > 0 {
				size := l.SizeBytes
				out[i].SizeBytes = &size
			}
		}
	}
	return out, nil
}

// Choice is the image a rental runs, resolved from what the renter asked.
type Choice struct {
	// ImageID and Slug name the catalogue image; 0 and "" for a custom one.
	ImageID int64
	Slug    string
	// Name is the catalogue image's name, or the reference of a custom one.
	Name string
	// Reference is what the agent pulls and runs.
	Reference string
	// CUDAVersion is the CUDA runtime the image needs: the catalogue's,
	// or for a custom image the CUDA_VERSION the offer's node found in it
	// when it has it locally; "" when it needs none or it is not known
	// (the agent checks again after the pull).
	CUDAVersion string
	// Custom is true for the renter's own image.
	Custom bool
	// Jupyter is true for a catalogue image that has Jupyter (JupyterLab or
	// the Notebook), which the launcher starts for the browser.
	Jupyter bool
}

func choiceOf(im models.Image) Choice {
	return Choice{ImageID: im.ID, Slug: im.Slug, Name: im.Name, Reference: im.Reference, CUDAVersion: im.CUDAVersion, Jupyter: im.Jupyter}
}

// maxRefLen bounds what is read as a reference (a name of at most 255
// characters, a tag of 128, a digest).
const maxRefLen = 512

// Resolve turns what a renter asked for (the rent form's or the API's
// "image") into the image a rental on the offer runs:
//
//   - "" is the offer's default: the first of its images in catalogue
//     order (ForOffer's first);
//   - a catalogue slug, or a catalogue image's reference, is that image,
//     refused when the offer does not offer it;
//   - anything else is a custom reference, refused unless the offer
//     allows custom images, and validated (registry/name:tag, name:tag or
//     name@sha256:…); its CUDA version is the one the offer's node found
//     in it when it has it locally, else unknown ("").
//
// Refusals are on the field "image": EIMAGEINCOMPATIBLE for an image the
// offer does not allow (a catalogue image it does not offer, a custom
// image where it takes none), EINVALID otherwise. Resolve does not apply the
// CUDA rule: CheckOfferNode and CompatibleNodes do.
func Resolve(ctx context.Context, db *models.DB, offer models.Offer, ref string) (Choice, error) {
	tx := db.R.WithContext(ctx)
	ref = strings.TrimSpace(ref)
	offered, err := models.ImagesOfOffer(tx, offer.ID)
	if err != nil {
		return Choice{}, err
	}
	if ref == "" {
		if len(offered) == 0 {
			return Choice{}, apperr.Field("image", "images.err.none_offered")
		}
		return choiceOf(offered[0]), nil
	}
	if len(ref) > maxRefLen {
		return Choice{}, apperr.Field("image", "images.err.reference_long", maxNameLen)
	}
	for _, im := range offered {
		if ref == im.Slug || familiar(ref) == familiar(im.Reference) {
			return choiceOf(im), nil
		}
	}
	cat, err := catalogueMatch(tx, ref)
	if err != nil {
		return Choice{}, err
	}
	if cat != nil {
		return Choice{}, apperr.FieldCode(apperr.EIMAGEINCOMPATIBLE, "image", "images.err.not_offered", cat.Slug, offeredSlugs(offered))
	}
	if !strings.ContainsAny(ref, ":@/") {
		// It reads as a slug, and no catalogue image has it.
		return Choice{}, apperr.Field("image", "images.err.unknown", ref, offeredSlugs(offered))
	}
	if !offer.CustomImages {
		return Choice{}, apperr.FieldCode(apperr.EIMAGEINCOMPATIBLE, "image", "images.err.custom_not_allowed", offeredSlugs(offered))
	}
	if err := CheckReference(ref); err != nil {
		return Choice{}, err
	}
	c := Choice{Name: ref, Reference: ref, Custom: true}
	local, err := models.NodeImagesOf(tx, []int64{offer.NodeID})
	if err != nil {
		return Choice{}, err
	}
	for _, l := range local {
		if familiar(l.Ref) == familiar(ref) {
			c.CUDAVersion = l.CUDAVersion
		}
	}
	return c, nil
}

// catalogueMatch is the catalogue image whose slug or reference ref is,
// or nil.
func catalogueMatch(tx *gorm.DB, ref string) (*models.Image, error) {
	im, err := models.ImageBySlug(tx, ref)
	if err == nil {
		return &im, nil
	}
	if apperr.Code(err) != apperr.ENOTFOUND {
		return nil, err
	}
	all, err := models.CatalogueImages(tx)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if familiar(all[i].Reference) == familiar(ref) {
			return &all[i], nil
		}
	}
	return nil, nil
}

// offeredSlugs lists the offer's slugs for a message.
func offeredSlugs(imgs []models.Image) string {
	s := make([]string, len(imgs))
	for i, im := range imgs {
		s[i] = im.Slug
	}
	return strings.Join(s, ", ")
}
