package images

import (
	"strings"
	"testing"

	"suanli/apperr"
	"suanli/locales"
)

// A custom image is a reference with a tag or a digest; anything else is
// refused on the field "image", saying what is wrong.
func TestCheckReference(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		ref, key string // key "": valid
	}{
		{"ubuntu:22.04", ""},
		{"pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", ""},
		{"registry.example.com:5000/team/train:v1.2_rc", ""},
		{"localhost:5000/x:latest", ""},
		{"ghcr.io/org/img@" + digest, ""},
		{"ghcr.io/org/img:v1@" + digest, ""},
		{"[::1]:5000/img:v1", ""},
		{"docker.io/library/ubuntu:22.04", ""},
		{"ubuntu", "images.err.reference_tag"},
		{"team/train", "images.err.reference_tag"},
		{"Team/Train:v1", "images.err.reference_case"},
		{"img@sha256:abc", "images.err.reference"},
		{"img:", "images.err.reference"},
		{"img:-x", "images.err.reference"},
		{"has space:v1", "images.err.reference"},
		{"a//b:v1", "images.err.reference"},
		{"img:" + strings.Repeat("t", 129), "images.err.reference"},
		{strings.Repeat("a", 256) + ":v1", "images.err.reference_long"},
		{"; rm -rf /:v1", "images.err.reference"},
	} {
		err := CheckReference(c.ref)
		if c.key == "" {
			if err != nil {
				t.Errorf("%q refused: %v", c.ref, err)
			}
			continue
		}
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.EINVALID || e.Field != "image" || e.Key != c.key {
			t.Errorf("%q: %#v, want %s on image", c.ref, err, c.key)
		}
	}
}

// Docker lists Hub images without docker.io/ and official ones without
// library/: references that differ only so name the same image.
func TestFamiliar(t *testing.T) {
	for in, want := range map[string]string{
		"docker.io/library/ubuntu:22.04":        "ubuntu:22.04",
		"library/ubuntu:22.04":                  "ubuntu:22.04",
		"index.docker.io/pytorch/pytorch:2.5.1": "pytorch/pytorch:2.5.1",
		"ubuntu:22.04":                          "ubuntu:22.04",
		"ghcr.io/library/x:1":                   "ghcr.io/library/x:1",
		"library/team/x:1":                      "library/team/x:1",
	} {
		if got := familiar(in); got != want {
			t.Errorf("familiar(%q) = %q, want %q", in, got, want)
		}
	}
}

// The CUDA rule compares major.minor numerically and names both versions,
// in both languages.
func TestCheckNode(t *testing.T) {
	for _, c := range []struct {
		image, driver string
		key           string // "": allowed
	}{
		{"12.4", "12.4", ""},
		{"12.4", "12.6", ""},
		{"12.4.1", "12.4", ""},
		{"11.8", "12.0", ""},
		{"12.8", "12.4", "images.err.cuda_too_new"},
		{"12.10", "12.9", "images.err.cuda_too_new"}, // numeric, not text: 10 > 9
		{"12.9", "12.10", ""},
		{"13.0", "12.8", "images.err.cuda_too_new"},
		{"12.4", "", ""}, // not judged: the agent checks after the pull
		{"12.4", "garbage", ""},
		{"", "", ""}, // no CUDA needed: any node
		{"", "12.4", ""},
	} {
		err := CheckNode(Choice{CUDAVersion: c.image}, c.driver)
		if c.key == "" {
			if err != nil || !Compatible(Choice{CUDAVersion: c.image}, c.driver) {
				t.Errorf("image %q on driver %q refused: %v", c.image, c.driver, err)
			}
			continue
		}
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.EIMAGEINCOMPATIBLE || e.Field != "image" || e.Key != c.key || Compatible(Choice{CUDAVersion: c.image}, c.driver) {
			t.Errorf("image %q on driver %q: %v, want %s", c.image, c.driver, err, c.key)
		}
	}
	e, _ := apperr.As(CheckNode(Choice{CUDAVersion: "12.8"}, "12.4"))
	if zh := locales.T(locales.ZH, e.Key, e.Args...); zh != "镜像需要 CUDA 12.8，该节点的驱动最高支持 CUDA 12.4" {
		t.Errorf("zh-CN: %q", zh)
	}
	if en := e.Message; !strings.Contains(en, "CUDA 12.8") || !strings.Contains(en, "CUDA 12.4") {
		t.Errorf("en: %q", en)
	}
}

// A node's private copy is known by repository: every spelling, tag and
// digest of it names the same one.
func TestRepositoryOfNormalises(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("ab", 32)
	for ref, want := range map[string]string{
		"lab/x:1":                           "docker.io/lab/x",
		"docker.io/lab/x:2":                 "docker.io/lab/x",
		"index.docker.io/lab/x" + digest:    "docker.io/lab/x",
		"ubuntu:22.04":                      "docker.io/library/ubuntu",
		"127.0.0.1:5000/lab/train:v1":       "127.0.0.1:5000/lab/train",
		"127.0.0.1:5000/lab/train" + digest: "127.0.0.1:5000/lab/train",
		"Not A Reference":                   "Not A Reference",
	} {
		if got := RepositoryOf(ref); got != want {
			t.Errorf("RepositoryOf(%q) = %q, want %q", ref, got, want)
		}
	}
}
