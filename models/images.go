package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
)

// Image is one image of the platform catalogue (migration 00012 seeds
// it). Its order is its id: the rent form lists images in that order, and
// an offer's first image is its default.
type Image struct {
	ID   int64
	Slug string
	Name string
	// Framework and FrameworkVersion: "PyTorch", "2.5.1".
	Framework        string
	FrameworkVersion string
	// CUDAVersion is the CUDA runtime it was built for, major.minor
	// ("12.4"); "" when it has none.
	CUDAVersion string `gorm:"column:cuda_version"`
	// Reference is what the agent pulls and runs: [registry/]name:tag.
	Reference string
	// Digest and SizeBytes are nil until they are known; never made up.
	Digest    *string
	SizeBytes *int64
	// Jupyter is true when the image has Jupyter (JupyterLab or the
	// Notebook), which the launcher starts for the browser.
	Jupyter   bool
	CreatedAt time.Time
}

// NodeImage is one image name (repository:tag) a node's agent reported
// present on its host.
type NodeImage struct {
	NodeID int64
	Ref    string
	// ImageID is Docker's image id (sha256:…), not an images row.
	ImageID   string `gorm:"column:image_id"`
	SizeBytes int64
	// CUDAVersion is the image's CUDA_VERSION environment ("" if none).
	CUDAVersion string `gorm:"column:cuda_version"`
	// SeenAt is when the node's list last changed; the node's
	// last_heartbeat_at says whether it is still current.
	SeenAt time.Time
}

// CatalogueImages returns every catalogue image, in catalogue order.
func CatalogueImages(tx *gorm.DB) ([]Image, error) {
	var out []Image
	err := tx.Order("id").Find(&out).Error
	return out, err
}

// ImageBySlug returns the catalogue image with the slug; ENOTFOUND when
// there is none.
func ImageBySlug(tx *gorm.DB, slug string) (Image, error) {
	var im Image
	err := tx.Where("slug = ?", slug).First(&im).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return im, apperr.NotFound("image " + slug)
	}
	return im, err
}

// ImagesBySlugs returns the catalogue images with these slugs, in
// catalogue order; a slug that names none is left out.
func ImagesBySlugs(tx *gorm.DB, slugs []string) ([]Image, error) {
	var out []Image
	if len(slugs) == 0 {
		return out, nil
	}
	err := tx.Where("slug IN ?", slugs).Order("id").Find(&out).Error
	return out, err
}

// ImagesOfOffer returns the catalogue images an offer offers, in
// catalogue order. This is the one place of the rule: the images listed
// for the offer in offer_images, or, when none is listed, every catalogue
// image.
func ImagesOfOffer(tx *gorm.DB, offerID int64) ([]Image, error) {
	var out []Image
	err := tx.Where(`id IN (SELECT image_id FROM offer_images WHERE offer_id = ?)
		OR NOT EXISTS (SELECT 1 FROM offer_images WHERE offer_id = ?)`, offerID, offerID).Order("id").Find(&out).Error
	return out, err
}

// OfferImageSlugs returns, by offer, the slugs listed in offer_images
// for the offers, in catalogue order; an offer with none listed (it offers
// every catalogue image, see ImagesOfOffer) is absent.
func OfferImageSlugs(tx *gorm.DB, offerIDs []int64) (map[int64][]string, error) {
	out := map[int64][]string{}
	if len(offerIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		OfferID int64
		Slug    string
	}
	err := tx.Raw(`SELECT oi.offer_id, i.slug FROM offer_images oi JOIN images i ON i.id = oi.image_id
		WHERE oi.offer_id IN ? ORDER BY oi.offer_id, i.id`, offerIDs).Scan(&rows).Error
	for _, r := range rows {
		out[r.OfferID] = append(out[r.OfferID], r.Slug)
	}
	return out, err
}

// SetOfferImages replaces the catalogue images an offer lists, in tx; no
// ids means every catalogue image (see ImagesOfOffer).
func SetOfferImages(tx *gorm.DB, offerID int64, imageIDs []int64) error {
	if err := tx.Exec(`DELETE FROM offer_images WHERE offer_id = ?`, offerID).Error; err != nil {
		return err
	}
	for _, id := range imageIDs {
		if err := tx.Exec(`INSERT INTO offer_images (offer_id, image_id) VALUES (?, ?)`, offerID, id).Error; err != nil {
			return err
		}
	}
	return nil
}

// NodeImagesOf returns the images the nodes' agents last reported, by
// node then name.
func NodeImagesOf(tx *gorm.DB, nodeIDs []int64) ([]NodeImage, error) {
	var out []NodeImage
	if len(nodeIDs) == 0 {
		return out, nil
	}
	err := tx.Where("node_id IN ?", nodeIDs).Order("node_id, ref").Find(&out).Error
	return out, err
}

// ReplaceNodeImages stores a node's newly reported image list (each row's
// NodeID is set) and its hash, in tx. Heartbeats call it only when the
// hash differs from the node's ImagesHash, so an unchanged list costs no
// write.
func ReplaceNodeImages(tx *gorm.DB, nodeID int64, hash string, imgs []NodeImage) error {
	if err := tx.Where("node_id = ?", nodeID).Delete(&NodeImage{}).Error; err != nil {
		return err
	}
	for i := range imgs {
		imgs[i].NodeID = nodeID
	}
	if len(imgs) > 0 {
		if err := tx.CreateInBatches(imgs, 100).Error; err != nil {
			return err
		}
	}
	return tx.Model(&Node{}).Where("id = ?", nodeID).Update("images_hash", hash).Error
}

// NodeCUDADriverVersions returns, by node, the CUDA version the node's
// driver last reported ("" for a node that never reported one).
func NodeCUDADriverVersions(tx *gorm.DB, nodeIDs []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(nodeIDs))
	if len(nodeIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		ID                int64
		CUDADriverVersion string `gorm:"column:cuda_driver_version"`
	}
	err := tx.Model(&Node{}).Select("id", "cuda_driver_version").Where("id IN ?", nodeIDs).Scan(&rows).Error
	for _, r := range rows {
		out[r.ID] = r.CUDADriverVersion
	}
	return out, err
}

// OfferNodeID returns the node of an offer; ENOTFOUND when there is no
// such offer.
func OfferNodeID(tx *gorm.DB, offerID int64) (int64, error) {
	var ids []int64
	if err := tx.Model(&Offer{}).Where("id = ?", offerID).Pluck("node_id", &ids).Error; err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, apperr.NotFound(fmt.Sprintf("offer %d", offerID))
	}
	return ids[0], nil
}
