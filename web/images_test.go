package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/supply"
	"suanli/routenames"
)

// The catalogue and an offer's images, in the public API: the
// catalogue's fields, and for an offer whether its node has each image
// and can run it; offers and their pages say their images, custom-image
// rule, storage and no-GPU prices and storage kind.
func TestImagesAPIAndOfferPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		_, body := a.get(a.url(routenames.APIImagesList))
		type list struct {
			Images []handlers.APIImage `json:"images"`
			Total  int                 `json:"total"`
		}
		cat := decode[list](t, body)
		must(t, cat.Total == 7 && len(cat.Images) == 7, "catalogue: %s", body)
		first := cat.Images[0]
		must(t, first.Slug == "pytorch-2.5-cuda12.4" && first.Framework == "PyTorch" && first.FrameworkVersion == "2.5.1" && first.CUDAVersion == "12.4" &&
			first.Reference == "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime" && first.Digest == nil && first.SizeBytes == nil && first.Cached == nil,
			"first image: %+v", first)
		must(t, strings.Contains(body, `"digest":null`) && !strings.Contains(body, `"cached"`), "catalogue JSON: %s", body)

		// An offer in the shared-storage demo datacentre, whose node has the
		// test image and a CUDA 12.4 driver.
		var o models.Offer
		must(t, db.R.Where("datacenter_id = (SELECT id FROM datacenters WHERE slug = 'cd-science-city')").Order("id").First(&o).Error == nil, "find offer")
		err := db.Tx(t.Context(), func(tx *gorm.DB) error {
			if err := supply.RecordNodeHeartbeat(tx, o.NodeID, supply.NodeHeartbeat{At: db.Now().UTC(), Health: models.NodeHealthy, AgentInfo: "{}", CUDADriverVersion: "12.4"}); err != nil {
				return err
			}
			return models.ReplaceNodeImages(tx, o.NodeID, "h", []models.NodeImage{{Ref: "suanli-test/sshd:bookworm", ImageID: "sha256:aa", SizeBytes: 220_000_000, SeenAt: db.Now().UTC()}})
		})
		must(t, err == nil, "node report: %v", err)
		_, body = a.get(a.url(routenames.APIImagesList) + fmt.Sprintf("?offer_id=%d", o.ID))
		mine := decode[list](t, body)
		must(t, mine.Total == 7, "offer's images: %s", body)
		for _, im := range mine.Images {
			must(t, im.Cached != nil && im.Compatible != nil, "offer image without cached/compatible: %+v", im)
			switch im.Slug {
			case "debian-sshd":
				must(t, *im.Cached && *im.Compatible && im.SizeBytes != nil && *im.SizeBytes == 220_000_000, "debian-sshd: %+v", im)
			case "pytorch-2.7-cuda12.8":
				must(t, !*im.Cached && !*im.Compatible, "CUDA 12.8 on a 12.4 driver: %+v", im)
			}
		}
		for q, want := range map[string]int{"?offer_id=abc": 400, "?offer_id=0": 400, "?offer_id=999999": 404, "?page=2": 400, "?per_page=0": 400} {
			res, body := a.get(a.url(routenames.APIImagesList) + q)
			must(t, res.StatusCode == want && strings.Contains(body, `"error"`), "%s: %d %s", q, res.StatusCode, body)
		}

		_, body = a.get(a.url(routenames.APIOffersShow, o.ID))
		got := decode[handlers.APIOffer](t, body)
		must(t, got.Storage == "shared" && !got.CustomImages && got.StoragePricePerGBMonthFen == 30 && got.NoGPUPricePerHourFen == 10, "api offer: %s", body)

		_, page := a.get(a.url(routenames.OffersShow, o.ID), "Accept-Language", "en")
		contains(t, page, `id="images"`, "Debian 12 (sshd, python3)", "debian-sshd", "ready (no download)", "needs a newer CUDA than this node&#39;s driver (CUDA 12.4)", "supports CUDA 12.4 at most",
			"12.8", "¥0.30", "/GB·month", "¥0.10", "Custom images are not allowed", "Files follow a rental to any node of this datacentre.")
		_, zh := a.get(a.url(routenames.OffersShow, o.ID))
		contains(t, zh, "镜像", "已就绪（无需下载）", "/GB·月", "无卡模式", "该报价不允许自定义镜像。")

		var silent models.Offer
		must(t, db.R.Where("node_id <> ?", o.NodeID).Order("id").First(&silent).Error == nil, "another offer")
		_, page = a.get(a.url(routenames.OffersShow, silent.ID), "Accept-Language", "en")
		contains(t, page, "the node has not reported its CUDA driver yet")

		_, page = a.get(a.url(routenames.DatacentersShow, "cd-science-city"), "Accept-Language", "en")
		contains(t, page, `data-storage="shared"`, "Shared storage", "Files follow a rental to any node of this datacentre.")
		_, page = a.get(a.url(routenames.DatacentersShow, "cd-tianfu-swpark"), "Accept-Language", "en")
		contains(t, page, `data-storage="local"`, "Local disk", "a rental whose node fails restarts elsewhere without them")
		_, zh = a.get(a.url(routenames.DatacentersShow, "cd-tianfu-swpark"))
		contains(t, zh, "本地磁盘", "文件不会跟随")
	})
}

// Providers set an offer's images, custom-image rule and storage and
// no-GPU prices, and a datacentre's storage, through the API; bad values
// are a 422 naming the field and change nothing.
func TestProviderAPIImagesPricesAndStorage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProviderAPIFixture(t, db)
		a := f.a
		show := a.url(routenames.APIProviderOffersShow, idParam(f.offerA))
		patch := a.url(routenames.APIProviderOffersUpdate, idParam(f.offerA))
		st, out, raw := apiCall(a, f.tokA, "GET", show, "")
		must(t, st == 200 && out["custom_images"] == false && out["storage_price_per_gb_month_fen"] == float64(30) &&
			out["no_gpu_price_per_hour_fen"] == float64(10) && len(out["images"].([]any)) == 0, "defaults: %d %s", st, raw)

		st, out, raw = apiCall(a, f.tokA, "PATCH", patch,
			`{"custom_images":true,"storage_price_per_gb_month_fen":0,"no_gpu_price_per_hour_fen":50,"images":["debian-sshd","pytorch-2.5-cuda12.4"]}`)
		must(t, st == 200 && out["custom_images"] == true && out["storage_price_per_gb_month_fen"] == float64(0) && out["no_gpu_price_per_hour_fen"] == float64(50),
			"patch: %d %s", st, raw)
		must(t, fmt.Sprint(out["images"]) == "[pytorch-2.5-cuda12.4 debian-sshd]", "images in catalogue order: %v", out["images"])
		_, before, _ := apiCall(a, f.tokA, "GET", show, "")

		for body, field := range map[string]string{
			`{"storage_price_per_gb_month_fen":-1}`:                 "storage_price_per_gb_month_fen",
			`{"storage_price_per_gb_month_fen":1001}`:               "storage_price_per_gb_month_fen",
			`{"no_gpu_price_per_hour_fen":10001}`:                   "no_gpu_price_per_hour_fen",
			`{"no_gpu_price_per_hour_fen":-5}`:                      "no_gpu_price_per_hour_fen",
			`{"images":["debian-sshd","no-such-one"]}`:              "images",
			`{"images":["debian-sshd"],"price_per_gpu_hour_fen":0}`: "price_per_gpu_hour_fen",
		} {
			st, _, raw := apiCall(a, f.tokA, "PATCH", patch, body)
			if st != 422 || !strings.Contains(raw, `"field":"`+field+`"`) {
				t.Errorf("PATCH %s: %d %s, want 422 naming %s", body, st, raw, field)
			}
			_, after, _ := apiCall(a, f.tokA, "GET", show, "")
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("PATCH %s changed the offer: %v, was %v", body, after, before)
			}
		}
		// An empty list is every catalogue image again.
		st, out, raw = apiCall(a, f.tokA, "PATCH", patch, `{"images":[]}`)
		must(t, st == 200 && len(out["images"].([]any)) == 0, "images cleared: %d %s", st, raw)

		// On create, the same fields; a zero price is stored as zero.
		st, out, raw = apiCall(a, f.tokA, "POST", a.url(routenames.APIProviderOffersCreate),
			`{"node_id":`+idParam(f.nodeA)+`,"gpu":"a100-40g-sxm","gpus":4,"price_per_gpu_hour_fen":800,"custom_images":true,`+
				`"storage_price_per_gb_month_fen":45,"no_gpu_price_per_hour_fen":0,"images":["ubuntu-22.04"]}`)
		must(t, st == 201 && out["custom_images"] == true && out["storage_price_per_gb_month_fen"] == float64(45) && out["no_gpu_price_per_hour_fen"] == float64(0) &&
			fmt.Sprint(out["images"]) == "[ubuntu-22.04]", "create: %d %s", st, raw)
		var stored models.Offer
		must(t, db.R.First(&stored, int64(out["id"].(float64))).Error == nil && stored.NoGPUPricePerHourFen == 0 && stored.StoragePricePerGBMonthFen == 45, "stored: %+v", stored)
		var offers int64
		db.R.Model(&models.Offer{}).Where("node_id = ?", f.nodeA).Count(&offers)
		st, _, raw = apiCall(a, f.tokA, "POST", a.url(routenames.APIProviderOffersCreate),
			`{"node_id":`+idParam(f.nodeA)+`,"gpu":"a100-40g-sxm","gpus":4,"price_per_gpu_hour_fen":800,"images":["nope"],"storage_price_per_gb_month_fen":5000}`)
		must(t, st == 422 && strings.Contains(raw, `"field":"images"`) && strings.Contains(raw, `"field":"storage_price_per_gb_month_fen"`), "bad create: %d %s", st, raw)
		var after int64
		db.R.Model(&models.Offer{}).Where("node_id = ?", f.nodeA).Count(&after)
		must(t, after == offers, "a refused offer was stored")

		// Datacentres: local unless shared is asked for; anything else refused.
		st, out, raw = apiCall(a, f.tokA, "POST", a.url(routenames.APIProviderDatacentersCreate), `{"name":"共享机房","city":"chengdu","storage":"shared"}`)
		must(t, st == 201 && out["storage"] == "shared", "shared datacentre: %d %s", st, raw)
		var dcs int64
		db.R.Model(&models.Datacenter{}).Count(&dcs)
		st, _, raw = apiCall(a, f.tokA, "POST", a.url(routenames.APIProviderDatacentersCreate), `{"name":"坏机房","city":"chengdu","storage":"nfs"}`)
		must(t, st == 422 && strings.Contains(raw, `"field":"storage"`), "storage nfs: %d %s", st, raw)
		var dcsAfter int64
		db.R.Model(&models.Datacenter{}).Count(&dcsAfter)
		must(t, dcsAfter == dcs, "a refused datacentre was stored")
		st, _, raw = apiCall(a, f.tokA, "GET", a.url(routenames.APIProviderDatacentersList), "")
		must(t, st == 200 && strings.Contains(raw, `"storage":"shared"`) && strings.Contains(raw, `"storage":"local"`), "datacentre list: %d %s", st, raw)
	})
}

// The portal's offer form chooses the catalogue images, allows custom
// images and prices storage and no-GPU time; the datacentre form says its
// storage. Bad values are shown beside their field and change nothing.
func TestProviderPortalImagesAndStorage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		f := newProviderFixture(t, a, "ops@pidu.example", "Pidu GPU")
		n, token := f.addNode(t, "pd-a100-01")
		heartbeatSimulated(t, a, token, "a100-40g-sxm", 8)
		count := func() int {
			os, err := f.svc.Offers(t.Context(), f.owner.user, f.acc.Provider.ID)
			if err != nil {
				t.Fatal(err)
			}
			return len(os)
		}
		body := f.owner.page(t, a.url(routenames.ProviderOffersNew, f.pid()), "en", 200)
		contains(t, body, `id="offer-images"`, `value="debian-sshd"`, "CUDA 12.8", `name="custom_images"`, `value="0.3"`, `value="0.1"`,
			"None ticked: every catalogue image")
		zh := f.owner.page(t, a.url(routenames.ProviderOffersNew, f.pid()), "zh-CN", 200)
		contains(t, zh, "目录镜像", "允许自定义镜像", "无卡模式价格")

		good := url.Values{"gpu": {"a100-40g-sxm"}, "node_id": {idParam(n.ID)}, "max_gpus": {"8"}, "price": {"9.80"},
			"sla_tiers": {"standard"}, "images": {"debian-sshd", "pytorch-2.5-cuda12.4"}, "custom_images": {"1"},
			"storage_price": {"0.50"}, "no_gpu_price": {"0"}}
		with := func(kv ...string) url.Values {
			v := url.Values{}
			for k, vs := range good {
				v[k] = vs
			}
			for i := 0; i+1 < len(kv); i += 2 {
				v.Set(kv[i], kv[i+1])
			}
			return v
		}
		for field, form := range map[string]url.Values{
			"storage_price": with("storage_price", "abc"),
			"no_gpu_price":  with("no_gpu_price", "1000"),
			"images":        with("images", "no-such-image"),
		} {
			res, body := f.owner.post(a.url(routenames.ProviderOffersCreate, f.pid()), form)
			must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldMessage(body, field) != "", "%s: %d, no message beside it: %s", field, res.StatusCode, snippet(body))
			must(t, count() == 0, "a refused offer was created")
		}
		_, body = f.owner.post(a.url(routenames.ProviderOffersCreate, f.pid()), with("storage_price", "11"))
		must(t, fieldMessage(body, "storage_price") == "Enter a storage price from ¥0 to ¥10 per GB-month.", "storage bound: %q", fieldMessage(body, "storage_price"))

		res, _ := f.owner.post(a.url(routenames.ProviderOffersCreate, f.pid()), good)
		must(t, res.StatusCode == http.StatusSeeOther && count() == 1, "create: %d", res.StatusCode)
		os, _ := f.svc.Offers(t.Context(), f.owner.user, f.acc.Provider.ID)
		o := os[0]
		must(t, o.CustomImages && o.StoragePricePerGBMonthFen == 50 && o.NoGPUPricePerHourFen == 0 &&
			fmt.Sprint(o.Images) == "[pytorch-2.5-cuda12.4 debian-sshd]", "stored: %+v", o)
		body = f.owner.page(t, a.url(routenames.ProviderOffersEdit, f.pid(), idParam(o.ID)), "en", 200)
		contains(t, body, `value="debian-sshd" checked`, `name="custom_images" value="1" checked`, `value="0.5"`)

		// Editing: none ticked is every image; no custom images.
		edit := with("images", "", "custom_images", "")
		delete(edit, "custom_images")
		delete(edit, "images")
		res, _ = f.owner.post(a.url(routenames.ProviderOffersUpdate, f.pid(), idParam(o.ID)), edit)
		must(t, res.StatusCode == http.StatusSeeOther, "edit: %d", res.StatusCode)
		o2, _ := f.svc.Offer(t.Context(), f.owner.user, f.acc.Provider.ID, o.ID)
		must(t, !o2.CustomImages && len(o2.Images) == 0 && o2.StoragePricePerGBMonthFen == 50, "edited: %+v", o2)

		// Datacentres.
		dcs := func() []string {
			list, err := f.svc.Datacenters(t.Context(), f.owner.user, f.acc.Provider.ID)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, d := range list {
				out = append(out, string(d.Storage))
			}
			return out
		}
		body = f.owner.page(t, a.url(routenames.ProviderDatacenters, f.pid()), "en", 200)
		contains(t, body, `id="dc-storage"`, "--volume-root PATH", "Local disk")
		res, body = f.owner.post(a.url(routenames.ProviderDatacentersCreate, f.pid()), url.Values{"name": {"郫都机房"}, "city": {"chengdu"}, "storage": {"nfs"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldMessage(body, "storage") != "", "storage nfs: %d %s", res.StatusCode, snippet(body))
		must(t, len(dcs()) == 1, "a refused datacentre was created")
		res, _ = f.owner.post(a.url(routenames.ProviderDatacentersCreate, f.pid()), url.Values{"name": {"郫都机房"}, "city": {"chengdu"}, "storage": {"shared"}})
		must(t, res.StatusCode == http.StatusSeeOther, "shared datacentre: %d", res.StatusCode)
		must(t, fmt.Sprint(dcs()) == "[local shared]", "storages: %v", dcs())
		list, _ := f.svc.Datacenters(t.Context(), f.owner.user, f.acc.Provider.ID)
		body = f.owner.page(t, a.url(routenames.ProviderDatacentersEdit, f.pid(), idParam(list[1].ID)), "zh-CN", 200)
		contains(t, body, `value="shared" checked`, "共享存储", "--volume-root")
		// A form without the field keeps the datacentre's storage.
		res, _ = f.owner.post(a.url(routenames.ProviderDatacentersUpdate, f.pid(), idParam(list[1].ID)), url.Values{"name": {"郫都机房"}, "city": {"chengdu"}})
		must(t, res.StatusCode == http.StatusSeeOther && fmt.Sprint(dcs()) == "[local shared]", "update without storage: %d %v", res.StatusCode, dcs())
	})
}
