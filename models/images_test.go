package models_test

import (
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/supply"
)

// The catalogue the migration seeds: real upstream references, the
// locally built test image, nothing made up (no digest, no size).
func TestImageCatalogueSeed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		imgs, err := models.CatalogueImages(db.R)
		if err != nil {
			t.Fatal(err)
		}
		var slugs []string
		for _, im := range imgs {
			slugs = append(slugs, im.Slug)
			if im.Digest != nil || im.SizeBytes != nil {
				t.Errorf("%s: digest %v size %v, want both unknown", im.Slug, im.Digest, im.SizeBytes)
			}
			if im.Reference == "" || im.Name == "" {
				t.Errorf("%s: reference %q name %q", im.Slug, im.Reference, im.Name)
			}
		}
		want := []string{"pytorch-2.5-cuda12.4", "pytorch-2.7-cuda12.8", "tensorflow-2.17-cuda12.3", "cuda-12.4-runtime", "ubuntu-22.04", "debian-sshd", "debian-jupyter"}
		if !slices.Equal(slugs, want) {
			t.Fatalf("catalogue %v, want %v in that order", slugs, want)
		}
		sshd, err := models.ImageBySlug(db.R, "debian-sshd")
		if err != nil || sshd.Reference != "suanli-test/sshd:bookworm" || sshd.CUDAVersion != "" || sshd.Jupyter {
			t.Errorf("debian-sshd: %+v %v", sshd, err)
		}
		jupyter, err := models.ImageBySlug(db.R, "debian-jupyter")
		if err != nil || jupyter.Reference != "suanli-test/jupyter:bookworm" || !jupyter.Jupyter {
			t.Errorf("debian-jupyter: %+v %v", jupyter, err)
		}
		if pt := imgs[1]; pt.CUDAVersion != "12.8" || pt.Framework != "PyTorch" {
			t.Errorf("pytorch 2.7: %+v", pt)
		}
		if _, err := models.ImageBySlug(db.R, "nope"); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("unknown slug: %v", err)
		}
	})
}

// An offer with no images listed offers every catalogue image; once some
// are listed, only those, in catalogue order. New offers and datacentres
// get the columns' defaults.
func TestOfferImagesAndDefaults(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		n, o := demoNode(t, db)
		if o.StoragePricePerGBMonthFen != models.DefaultStoragePricePerGBMonthFen || o.NoGPUPricePerHourFen != models.DefaultNoGPUPricePerHourFen || o.CustomImages {
			t.Errorf("demo offer: storage %d no-GPU %d custom %v, want the defaults", o.StoragePricePerGBMonthFen, o.NoGPUPricePerHourFen, o.CustomImages)
		}
		if id, err := models.OfferNodeID(db.R, o.ID); err != nil || id != n.ID {
			t.Errorf("OfferNodeID = %d %v, want %d", id, err, n.ID)
		}
		if _, err := models.OfferNodeID(db.R, 1<<40); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("OfferNodeID of no offer: %v", err)
		}
		all, err := models.ImagesOfOffer(db.R, o.ID)
		if err != nil || len(all) != 7 {
			t.Fatalf("no list: %d images %v, want the whole catalogue", len(all), err)
		}
		pick, err := models.ImagesBySlugs(db.R, []string{"debian-sshd", "pytorch-2.5-cuda12.4", "unknown"})
		if err != nil || len(pick) != 2 {
			t.Fatalf("ImagesBySlugs: %d %v", len(pick), err)
		}
		storeTx(t, db, func(tx *gorm.DB) error { return models.SetOfferImages(tx, o.ID, []int64{pick[1].ID, pick[0].ID}) })
		got, err := models.ImagesOfOffer(db.R, o.ID)
		if err != nil || len(got) != 2 || got[0].Slug != "pytorch-2.5-cuda12.4" || got[1].Slug != "debian-sshd" {
			t.Fatalf("listed: %+v %v", got, err)
		}
		slugs, err := models.OfferImageSlugs(db.R, []int64{o.ID, o.ID + 1})
		if err != nil || !slices.Equal(slugs[o.ID], []string{"pytorch-2.5-cuda12.4", "debian-sshd"}) || slugs[o.ID+1] != nil {
			t.Errorf("OfferImageSlugs = %v %v", slugs, err)
		}
		storeTx(t, db, func(tx *gorm.DB) error { return models.SetOfferImages(tx, o.ID, nil) })
		if all, _ := models.ImagesOfOffer(db.R, o.ID); len(all) != 7 {
			t.Errorf("list cleared: %d images, want every one", len(all))
		}

		// Prices and the custom-image switch are offer terms.
		o.StoragePricePerGBMonthFen, o.NoGPUPricePerHourFen, o.CustomImages = 0, 25, true
		storeTx(t, db, func(tx *gorm.DB) error { return supply.SetOfferTerms(tx, &o, false) })
		var back models.Offer
		if err := db.R.First(&back, o.ID).Error; err != nil || back.StoragePricePerGBMonthFen != 0 || back.NoGPUPricePerHourFen != 25 || !back.CustomImages {
			t.Errorf("terms stored: %+v %v", back, err)
		}

		// A datacentre is local unless it says otherwise; nothing else is stored.
		dc := &models.Datacenter{Slug: "img-dc", NameZH: "机房", NameEN: "DC", City: "chengdu", Region: "cn-southwest", Tier: "Tier III", UplinkGbps: 10, CreatedAt: time.Now().UTC()}
		storeTx(t, db, func(tx *gorm.DB) error { return supply.InsertDatacenter(tx, dc) })
		var stored models.Datacenter
		if err := db.R.First(&stored, dc.ID).Error; err != nil || stored.Storage != models.StorageLocal {
			t.Errorf("new datacentre: storage %q %v", stored.Storage, err)
		}
		stored.Storage = "nfs"
		err = db.Tx(t.Context(), func(tx *gorm.DB) error { return supply.SetDatacenterDetails(tx, &stored) })
		if err == nil {
			t.Error("storage nfs stored: the CHECK constraint is missing")
		}
		stored.Storage = models.StorageShared
		storeTx(t, db, func(tx *gorm.DB) error { return supply.SetDatacenterDetails(tx, &stored) })
		if err := db.R.First(&stored, dc.ID).Error; err != nil || stored.Storage != models.StorageShared {
			t.Errorf("shared: %q %v", stored.Storage, err)
		}
	})
}

// What a node's agent reports about its images is replaced as a whole,
// with its hash on the node; the CUDA driver version comes from the
// heartbeat's record.
func TestNodeImagesAndDriverVersions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		n, _ := demoNode(t, db)
		now := time.Now().UTC().Truncate(time.Second)
		storeTx(t, db, func(tx *gorm.DB) error {
			return models.ReplaceNodeImages(tx, n.ID, "h1", []models.NodeImage{
				{Ref: "suanli-test/sshd:bookworm", ImageID: "sha256:aa", SizeBytes: 220e6, SeenAt: now},
				{Ref: "nvidia/cuda:12.4.1-runtime-ubuntu22.04", ImageID: "sha256:bb", SizeBytes: 2e9, CUDAVersion: "12.4.1", SeenAt: now},
			})
		})
		got, err := models.NodeImagesOf(db.R, []int64{n.ID})
		if err != nil || len(got) != 2 || got[0].Ref != "nvidia/cuda:12.4.1-runtime-ubuntu22.04" || got[0].CUDAVersion != "12.4.1" || got[1].SizeBytes != 220e6 {
			t.Fatalf("node images: %+v %v", got, err)
		}
		storeTx(t, db, func(tx *gorm.DB) error {
			return models.ReplaceNodeImages(tx, n.ID, "h2", []models.NodeImage{{Ref: "ubuntu:22.04", ImageID: "sha256:cc", SeenAt: now}})
		})
		var back models.Node
		if err := db.R.First(&back, n.ID).Error; err != nil || back.ImagesHash != "h2" {
			t.Errorf("hash: %q %v", back.ImagesHash, err)
		}
		if got, _ := models.NodeImagesOf(db.R, []int64{n.ID}); len(got) != 1 || got[0].Ref != "ubuntu:22.04" {
			t.Errorf("replaced: %+v", got)
		}

		v, err := models.NodeCUDADriverVersions(db.R, []int64{n.ID})
		if err != nil || v[n.ID] != "" {
			t.Errorf("before a heartbeat: %v %v", v, err)
		}
		storeTx(t, db, func(tx *gorm.DB) error {
			return supply.RecordNodeHeartbeat(tx, n.ID, supply.NodeHeartbeat{At: now, Health: models.NodeHealthy, AgentInfo: "{}",
				VolumeRoot: "/mnt/volumes", CUDADriverVersion: "12.4"})
		})
		v, err = models.NodeCUDADriverVersions(db.R, []int64{n.ID, n.ID + 1000})
		if err != nil || v[n.ID] != "12.4" || v[n.ID+1000] != "" {
			t.Errorf("after a heartbeat: %v %v", v, err)
		}
		if err := db.R.First(&back, n.ID).Error; err != nil || back.VolumeRoot != "/mnt/volumes" || back.CUDADriverVersion != "12.4" {
			t.Errorf("node: volume root %q cuda %q %v", back.VolumeRoot, back.CUDADriverVersion, err)
		}
	})
}
