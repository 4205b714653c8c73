package images_test

import (
	"context"
	"slices"
	"testing"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/images"
	"suanli/models"
	"suanli/models/supply"
)

// market seeds the demo market and returns two of its offers on
// different nodes.
func market(t *testing.T, db *models.DB) (a, b models.Offer) {
	t.Helper()
	if err := demo.SeedDemo(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	var offers []models.Offer
	if err := db.R.Order("id").Find(&offers).Error; err != nil {
		t.Fatal(err)
	}
	for _, o := range offers[1:] {
		if o.NodeID != offers[0].NodeID {
			return offers[0], o
		}
	}
	t.Fatal("the demo market has one node")
	return
}

// tx runs fn in a write transaction.
func tx(t *testing.T, db *models.DB, fn func(tx *gorm.DB) error) {
	t.Helper()
	if err := db.Tx(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// reportDriver records a heartbeat of the node saying its driver's CUDA.
func reportDriver(t *testing.T, db *models.DB, nodeID int64, cuda string) {
	t.Helper()
	tx(t, db, func(tx *gorm.DB) error {
		return supply.RecordNodeHeartbeat(tx, nodeID, supply.NodeHeartbeat{At: db.Now().UTC(), Health: models.NodeHealthy, AgentInfo: "{}", CUDADriverVersion: cuda})
	})
}

// reportImages records the node's local images.
func reportImages(t *testing.T, db *models.DB, nodeID int64, hash string, imgs ...models.NodeImage) {
	t.Helper()
	for i := range imgs {
		imgs[i].SeenAt = db.Now().UTC()
	}
	tx(t, db, func(tx *gorm.DB) error { return models.ReplaceNodeImages(tx, nodeID, hash, imgs) })
}

func field(t *testing.T, err error, key string) {
	t.Helper()
	// An image the offer cannot run is image_incompatible (a launcher
	// picks another offer or image); any other bad image is invalid.
	want := apperr.EINVALID
	switch key {
	case "images.err.cuda_too_new", "images.err.not_offered", "images.err.custom_not_allowed":
		want = apperr.EIMAGEINCOMPATIBLE
	}
	e, ok := apperr.As(err)
	if !ok || e.Code != want || e.Field != "image" || e.Key != key {
		t.Errorf("got %v, want %s (%s) on the field image", err, key, want)
	}
}

func bySlug(imgs []images.Image) map[string]images.Image {
	m := map[string]images.Image{}
	for _, im := range imgs {
		m[im.Slug] = im
	}
	return m
}

// An offer's images: every catalogue image until its provider picks some;
// cached where its node has them (the node's size standing in for the
// catalogue's unknown one); compatible where its CUDA driver can run them.
func TestForOffer(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		o, _ := market(t, db)
		cat, err := images.Catalogue(ctx, db)
		if err != nil || len(cat) != 7 {
			t.Fatalf("catalogue: %d %v", len(cat), err)
		}
		for _, im := range cat {
			if im.Jupyter != (im.Slug == "debian-jupyter") {
				t.Errorf("catalogue image %s: Jupyter %v", im.Slug, im.Jupyter)
			}
		}
		imgs, err := images.ForOffer(ctx, db, o.ID)
		if err != nil || len(imgs) != len(cat) {
			t.Fatalf("offer with no list: %d images %v", len(imgs), err)
		}
		m := bySlug(imgs)
		// A node that never reported its driver is not judged (its agent
		// checks the image after pulling it).
		if !m["pytorch-2.5-cuda12.4"].Compatible || !m["debian-sshd"].Compatible || !m["ubuntu-22.04"].Compatible || m["debian-sshd"].Cached {
			t.Errorf("before any report: %+v", imgs)
		}

		reportDriver(t, db, o.NodeID, "12.4")
		reportImages(t, db, o.NodeID, "h1",
			models.NodeImage{Ref: "suanli-test/sshd:bookworm", ImageID: "sha256:aa", SizeBytes: 220_000_000},
			models.NodeImage{Ref: "docker.io/library/ubuntu:22.04", ImageID: "sha256:bb", SizeBytes: 77_000_000})
		imgs, err = images.ForOffer(ctx, db, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		m = bySlug(imgs)
		if s := m["debian-sshd"]; !s.Cached || s.SizeBytes == nil || *s.SizeBytes != 220_000_000 {
			t.Errorf("debian-sshd on the node: %+v", s)
		}
		if !m["ubuntu-22.04"].Cached || m["pytorch-2.5-cuda12.4"].Cached || m["pytorch-2.5-cuda12.4"].SizeBytes != nil {
			t.Errorf("ubuntu cached under its long name, pytorch not at all: %+v", imgs)
		}
		if !m["pytorch-2.5-cuda12.4"].Compatible || m["pytorch-2.7-cuda12.8"].Compatible || !m["tensorflow-2.17-cuda12.3"].Compatible {
			t.Errorf("CUDA 12.4 driver: %+v", imgs)
		}

		sshd, _ := models.ImageBySlug(db.R, "debian-sshd")
		tx(t, db, func(tx *gorm.DB) error { return models.SetOfferImages(tx, o.ID, []int64{sshd.ID}) })
		imgs, err = images.ForOffer(ctx, db, o.ID)
		if err != nil || len(imgs) != 1 || imgs[0].Slug != "debian-sshd" {
			t.Errorf("offer listing debian-sshd: %+v %v", imgs, err)
		}
		if _, err := images.ForOffer(ctx, db, 1<<40); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("no such offer: %v", err)
		}
	})
}

// What a renter asks for becomes a catalogue image the offer offers, or a
// custom reference where the offer allows them; everything else is
// refused on the field image, saying why.
func TestResolve(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		o, _ := market(t, db)
		c, err := images.Resolve(ctx, db, o, "")
		if err != nil || c.Slug != "pytorch-2.5-cuda12.4" || c.Reference != "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime" || c.CUDAVersion != "12.4" || c.Custom {
			t.Errorf("default: %+v %v", c, err)
		}
		if c, err := images.Resolve(ctx, db, o, " debian-sshd "); err != nil || c.Slug != "debian-sshd" || c.Reference != "suanli-test/sshd:bookworm" || c.ImageID == 0 {
			t.Errorf("slug: %+v %v", c, err)
		}
		// A catalogue image's reference is that image, custom images or not.
		if c, err := images.Resolve(ctx, db, o, "docker.io/library/ubuntu:22.04"); err != nil || c.Slug != "ubuntu-22.04" || c.Custom {
			t.Errorf("catalogue reference: %+v %v", c, err)
		}
		_, err = images.Resolve(ctx, db, o, "no-such-image")
		field(t, err, "images.err.unknown")
		_, err = images.Resolve(ctx, db, o, "registry.example.com/team/train:v1")
		field(t, err, "images.err.custom_not_allowed")

		// The provider narrows the list: the default follows, the rest is refused.
		sshd, _ := models.ImageBySlug(db.R, "debian-sshd")
		cuda, _ := models.ImageBySlug(db.R, "cuda-12.4-runtime")
		tx(t, db, func(tx *gorm.DB) error { return models.SetOfferImages(tx, o.ID, []int64{sshd.ID, cuda.ID}) })
		if c, err := images.Resolve(ctx, db, o, ""); err != nil || c.Slug != "cuda-12.4-runtime" {
			t.Errorf("default of a list (catalogue order): %+v %v", c, err)
		}
		_, err = images.Resolve(ctx, db, o, "pytorch-2.5-cuda12.4")
		field(t, err, "images.err.not_offered")
		_, err = images.Resolve(ctx, db, o, "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime")
		field(t, err, "images.err.not_offered")

		// Custom images, where allowed: validated, CUDA from the node when it has them.
		o.CustomImages = true
		c, err = images.Resolve(ctx, db, o, "registry.example.com/team/train:v1")
		if err != nil || !c.Custom || c.Slug != "" || c.Reference != "registry.example.com/team/train:v1" || c.CUDAVersion != "" {
			t.Errorf("custom: %+v %v", c, err)
		}
		_, err = images.Resolve(ctx, db, o, "Registry.example.com/Team/Train:v1")
		field(t, err, "images.err.reference_case")
		_, err = images.Resolve(ctx, db, o, "team/train")
		field(t, err, "images.err.reference_tag")
		_, err = images.Resolve(ctx, db, o, "team/train@sha256:abc")
		field(t, err, "images.err.reference")
		reportImages(t, db, o.NodeID, "h1", models.NodeImage{Ref: "registry.example.com/team/train:v1", ImageID: "sha256:cc", SizeBytes: 1, CUDAVersion: "12.8.1"})
		c, err = images.Resolve(ctx, db, o, "registry.example.com/team/train:v1")
		if err != nil || c.CUDAVersion != "12.8.1" {
			t.Fatalf("custom image the node has: %+v %v", c, err)
		}
		reportDriver(t, db, o.NodeID, "12.4")
		err = images.CheckOfferNode(db.R, o, c)
		field(t, err, "images.err.cuda_too_new")
		if e, _ := apperr.As(err); e == nil || !slices.Equal(e.Args, []any{"12.8", "12.4"}) {
			t.Errorf("versions named: %v", err)
		}
		if err := images.CheckOfferNode(db.R, o, images.Choice{Slug: "debian-sshd"}); err != nil {
			t.Errorf("no CUDA needed: %v", err)
		}
	})
}

// Provisioning skips the nodes whose driver cannot run the image, and for
// a custom image judges each node by what it found in its own copy.
func TestCompatibleNodes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		a, b := market(t, db)
		var silent models.Offer
		if err := db.R.Where("node_id NOT IN ?", []int64{a.NodeID, b.NodeID}).First(&silent).Error; err != nil {
			t.Fatal(err)
		}
		nodes := []int64{b.NodeID, a.NodeID, silent.NodeID}
		reportDriver(t, db, a.NodeID, "12.4")
		reportDriver(t, db, b.NodeID, "12.8")
		newer, err := images.Resolve(ctx, db, a, "pytorch-2.7-cuda12.8")
		if err != nil {
			t.Fatal(err)
		}
		got, err := images.CompatibleNodes(db.R, nodes, newer)
		// The silent node never said: not judged here.
		if err != nil || !slices.Equal(got, []int64{b.NodeID, silent.NodeID}) {
			t.Errorf("CUDA 12.8 image: %v %v, want node %d and the unreported one", got, err, b.NodeID)
		}
		plain, _ := images.Resolve(ctx, db, a, "debian-sshd")
		if got, err := images.CompatibleNodes(db.R, nodes, plain); err != nil || !slices.Equal(got, nodes) {
			t.Errorf("image without CUDA: %v %v, want every node in order", got, err)
		}
		a.CustomImages = true
		custom, err := images.Resolve(ctx, db, a, "registry.example.com/team/train:v1")
		if err != nil {
			t.Fatal(err)
		}
		reportImages(t, db, b.NodeID, "h", models.NodeImage{Ref: "registry.example.com/team/train:v1", ImageID: "sha256:dd", CUDAVersion: "13.0"})
		if got, err := images.CompatibleNodes(db.R, nodes, custom); err != nil || !slices.Equal(got, []int64{a.NodeID, silent.NodeID}) {
			t.Errorf("custom image needing CUDA 13.0 on node %d: %v %v", b.NodeID, got, err)
		}
	})
}
