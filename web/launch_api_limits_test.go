package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/handlers/launchapi"
	"suanli/handlers/rentaljson"
	"suanli/launch"
	"suanli/locales"
	"suanli/models"
	"suanli/models/launchstore"
	"suanli/offers"
	"suanli/routenames"
)

// freeGPUsOf are the ids of the model's free GPUs.
func freeGPUsOf(t *testing.T, db *models.DB, model string) []int64 {
	t.Helper()
	var ids []int64
	must(t, db.R.Model(&models.GPU{}).Where("gpu_model = ? AND state = ?", model, models.GPUFree).Pluck("id", &ids).Error == nil, "free GPUs")
	return ids
}

// setGPUState sets the GPUs' state and recounts the model's offers.
func setGPUState(t *testing.T, a *app, model string, ids []int64, state models.GPUState) {
	t.Helper()
	must(t, a.db.W.Model(&models.GPU{}).Where("id IN ?", ids).Update("state", state).Error == nil, "GPUs %s", state)
	var nodes []int64
	must(t, a.db.R.Model(&models.Offer{}).Where("gpu_model = ?", model).Distinct().Pluck("node_id", &nodes).Error == nil, "nodes")
	refreshMarket(t, a, nodes...)
}

// A refusal after which nothing was rented and a retry may succeed —
// insufficient_funds, no_capacity, offer_taken — is not stored under the
// Idempotency-Key: a launcher retrying with its fixed per-node key after
// a top-up, or once GPUs are free, rents (and only then is the answer
// replayed). Any other refusal is stored and replayed as before.
func TestLaunchRefusalsReleaseTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newAppWith(t, db, withLaunchBox(launchBox(t)))
		openMarket(t, a, "rtx-4090")
		key := testSSHKey(t)
		byType := `{"instance_type":"rtx-4090.1x","name":"c1-head","ssh_public_key":"` + key + `"}`

		// No balance: 402, then a top-up, and the same key rents.
		brokeUser, brokeOrg := fundedRenter(t, db, "broke-idem@example.com", testPassword, 0)
		brokeToken, _, err := (&accounts.Service{DB: db}).CreateAPIToken(context.Background(), brokeUser, "launcher")
		must(t, err == nil, "token: %v", err)
		st, h, body := launchPost(t, a, brokeToken, "c1-head", byType)
		code, _, _ := errorCode(t, body)
		must(t, st == http.StatusPaymentRequired && code == "insufficient_funds" && h.Get("Idempotent-Replayed") == "", "no balance: %d %s", st, body)
		must(t, db.Tx(context.Background(), func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, brokeOrg, 1_000_000, "promo_credit", "the top-up", nil, nil, db.Now().UTC())
		}) == nil, "top up")
		st, h, body = launchPost(t, a, brokeToken, "c1-head", byType)
		must(t, st == http.StatusCreated && h.Get("Idempotent-Replayed") == "", "the same key after a top-up: %d %s", st, body)
		st, h, again := launchPost(t, a, brokeToken, "c1-head", byType)
		must(t, st == http.StatusCreated && h.Get("Idempotent-Replayed") == "true" && again == body, "the rent is replayed: %d %s", st, again)
		must(t, rentalsOf(t, db, brokeOrg) == 1, "%d rentals, want 1", rentalsOf(t, db, brokeOrg))

		// A full market: no_capacity by type, offer_taken by offer; once
		// the GPUs are free, the same keys rent.
		org, token := apiToken(t, a, "full-idem@example.com")
		o := rtxOffer(t, db)
		byOffer := `{"offer_id":` + idParam(o.ID) + `,"gpus":1,"ssh_public_key":"` + key + `"}`
		free := freeGPUsOf(t, db, "rtx-4090")
		setGPUState(t, a, "rtx-4090", free, models.GPUBusy)
		for _, c := range []struct{ key, body, code string }{{"c2-head", byType, "no_capacity"}, {"c2-worker-1", byOffer, "offer_taken"}} {
			st, h, body := launchPost(t, a, token, c.key, c.body)
			code, _, _ := errorCode(t, body)
			must(t, st == http.StatusConflict && code == c.code && h.Get("Idempotent-Replayed") == "", "%s in a full market: %d %s", c.key, st, body)
		}
		must(t, rentalsOf(t, db, org) == 0, "a full market rented")
		setGPUState(t, a, "rtx-4090", free, models.GPUFree)
		for _, k := range []string{"c2-head", "c2-worker-1"} {
			b := byType
			if k == "c2-worker-1" {
				b = byOffer
			}
			st, h, body := launchPost(t, a, token, k, b)
			must(t, st == http.StatusCreated && h.Get("Idempotent-Replayed") == "", "%s once GPUs are free: %d %s", k, st, body)
		}
		must(t, rentalsOf(t, db, org) == 2, "%d rentals, want 2", rentalsOf(t, db, org))

		// Any other refusal is stored: the same key replays it.
		bad := `{"instance_type":"rtx-4090.1x","region":"atlantis","ssh_public_key":"` + key + `"}`
		st, _, body = launchPost(t, a, token, "c3-head", bad)
		must(t, st == http.StatusBadRequest, "an unknown region: %d %s", st, body)
		st, h, again = launchPost(t, a, token, "c3-head", bad)
		must(t, st == http.StatusBadRequest && h.Get("Idempotent-Replayed") == "true" && again == body, "a 400 is replayed: %d %v", st, h)
	})
}

// A refund moves money: POST /api/v1/wallet/refunds honours
// Idempotency-Key, so a retry gets the first answer and refunds nothing
// more; another body with the key is a 409.
func TestRefundsHonourTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		ctx := context.Background()
		sfx := strings.ToLower(randomHex(t))
		owner, token := verifiedWithToken(t, a, "refund-idem-"+sfx+"@example.com")
		org := mustOrgs(t, db, owner.ID)[0].Org.ID
		admin, err := (&accounts.Service{DB: db}).CreateUser(ctx, "refund-idem-admin-"+sfx+"@example.com", testPassword, "Admin", true)
		must(t, err == nil, "admin: %v", err)
		w := &billing.Wallet{DB: db, BaseURL: "http://suanli.test"}
		tp, _, err := w.StartTopup(ctx, owner, org, 50_000, models.MethodBank, locales.EN)
		must(t, err == nil, "top-up: %v", err)
		must(t, w.ConfirmBankTransfer(ctx, admin, tp.ID, 50_000) == nil, "confirm the transfer")

		path := a.url(routenames.APIWalletRefundsCreate)
		st, h, body, err := idemPost(a, path, token, "refund-1", `{"amount_fen":20000}`)
		must(t, err == nil && st == http.StatusCreated && h.Get("Idempotent-Replayed") == "", "refund: %d %s %v", st, body, err)
		st, h, again, err := idemPost(a, path, token, "refund-1", `{"amount_fen":20000}`)
		must(t, err == nil && st == http.StatusCreated && h.Get("Idempotent-Replayed") == "true" && again == body, "the retry: %d %s %v", st, again, err)
		st, _, other, err := idemPost(a, path, token, "refund-1", `{"amount_fen":10000}`)
		code, param, _ := errorCode(t, other)
		must(t, err == nil && st == http.StatusConflict && code == "conflict" && param == "Idempotency-Key", "another body: %d %s %v", st, other, err)
		var r struct {
			RefundableFen int64            `json:"refundable_fen"`
			Refunds       []map[string]any `json:"refunds"`
		}
		must(t, json.Unmarshal([]byte(mustStatus(t, a, token, "GET", a.url(routenames.APIWalletRefunds), "", http.StatusOK)), &r) == nil, "list")
		must(t, r.RefundableFen == 30_000 && len(r.Refunds) == 1, "after a refund and its retries: %d refundable, %d refunds", r.RefundableFen, len(r.Refunds))
	})
}

// A launch by type with volume_gb skips the offers whose disk cannot
// take it and rents a pricier one that can; when offers have the GPUs
// free but none such a disk it is no_capacity on volume_gb, and a size no
// offer could ever take is a 400.
func TestLaunchVolumeSizeSkipsSmallDisks(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		openMarket(t, a, "rtx-4090")
		org, token := apiToken(t, a, "volume-launcher@example.com")
		key := testSSHKey(t)
		cheapest := func() []*offers.Listed {
			_, list := a.index.ByPrice(false)
			var out []*offers.Listed
			for _, o := range list {
				if o.GPUModel() == "rtx-4090" && o.MaxGPUs() >= 2 && o.AvailableGPUs() >= 2 {
					out = append(out, o)
				}
			}
			return out
		}
		cands := cheapest()
		must(t, len(cands) >= 2, "%d candidates", len(cands))
		// The cheapest offer's disk is small.
		must(t, db.W.Model(&models.Offer{}).Where("id = ?", cands[0].ID).Update("disk_gb", 100).Error == nil, "shrink the disk")
		refreshMarket(t, a, cands[0].NodeID)
		cands = cheapest()
		must(t, cands[0].DiskGB() == 100, "the cheapest's disk is %d GB", cands[0].DiskGB())
		want := cands[slices.IndexFunc(cands, func(o *offers.Listed) bool { return o.MaxVolumeGB() >= 200 })]
		launchBody := func(gb int) string {
			return fmt.Sprintf(`{"instance_type":"rtx-4090.2x","volume_gb":%d,"ssh_public_key":"%s"}`, gb, key)
		}
		st, _, body := launchPost(t, a, token, "", launchBody(200))
		must(t, st == http.StatusCreated, "a 200 GB volume: %d %s", st, body)
		r := decode[rentaljson.Rental](t, body)
		must(t, r.OfferID == want.ID && r.OfferID != cands[0].ID, "rented offer %d, want %d (the cheapest with a disk of 200 GB)", r.OfferID, want.ID)
		var size int
		must(t, db.R.Model(&models.Volume{}).Where("id = (SELECT volume_id FROM rentals WHERE id = ?)", r.ID).Pluck("size_gb", &size).Error == nil && size == 200,
			"the volume is %d GB", size)

		most := 0
		for _, o := range cheapest() {
			most = max(most, o.MaxVolumeGB())
		}
		must(t, most < offers.MaxVolumeGB, "an offer takes the largest volume: %d", most)
		before := rentalsOf(t, db, org)
		st, _, body = launchPost(t, a, token, "", launchBody(most+1))
		code, param, msg := errorCode(t, body)
		must(t, st == http.StatusConflict && code == "no_capacity" && param == "volume_gb" && strings.Contains(msg, fmt.Sprintf("the largest takes %d GB", most)),
			"a volume no free offer takes: %d %s", st, body)
		st, _, body = launchPost(t, a, token, "", launchBody(offers.MaxVolumeGB+1))
		code, param, _ = errorCode(t, body)
		must(t, st == http.StatusBadRequest && code == "invalid" && param == "volume_gb", "a volume no offer ever takes: %d %s", st, body)
		must(t, rentalsOf(t, db, org) == before, "a refused launch rented")
	})
}

// jsonEscaped is s as a JSON string with every character escaped (\uXXXX,
// a surrogate pair beyond the BMP): the longest spelling of s.
func jsonEscaped(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r1, r2 := utf16.EncodeRune(r); r1 != '\uFFFD' {
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	b.WriteByte('"')
	return b.String()
}

// A spec at every limit (the environment, the script, twenty labels of
// 255 characters, the name), each character escaped, fits the create's
// body and arrives whole, with or without an Idempotency-Key; a body
// over the create's limit is a 413 too_large, sent with a length or
// chunked.
func TestLaunchSpecAtItsLimitsFitsTheBody(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		box := launchBox(t)
		a := newAppWith(t, db, withLaunchBox(box))
		openMarket(t, a, "rtx-4090")
		_, token := apiToken(t, a, "big-spec@example.com")
		env := map[string]string{}
		for i := range 8 {
			name := fmt.Sprintf("E%d", i)
			env[name] = strings.Repeat("\x01<&>", launch.MaxEnvBytes/8/4)[:launch.MaxEnvBytes/8-len(name)-2]
		}
		onstart := strings.Repeat("<\x01&>", launch.MaxOnstartBytes/4)
		name := strings.Repeat("😀", launch.MaxNameLen)
		labels := map[string]string{}
		for i := range launch.MaxLabels {
			labels[fmt.Sprintf("label-%02d", i)] = strings.Repeat("😀", launch.MaxLabelValue)
		}
		must(t, launch.Spec{Name: name, Labels: labels, Env: env, Onstart: onstart}.Check() == nil, "the spec is within its limits")
		spec := func() string {
			var b strings.Builder
			b.WriteString(`{"instance_type":"rtx-4090.1x","ssh_public_key":"` + testSSHKey(t) + `","name":` + jsonEscaped(name) + `,"labels":{`)
			i := 0
			for k, v := range labels {
				if i > 0 {
					b.WriteByte(',')
				}
				i++
				b.WriteString(jsonEscaped(k) + ":" + jsonEscaped(v))
			}
			b.WriteString(`},"env":{`)
			i = 0
			for k, v := range env {
				if i > 0 {
					b.WriteByte(',')
				}
				i++
				b.WriteString(jsonEscaped(k) + ":" + jsonEscaped(v))
			}
			b.WriteString(`},"onstart":` + jsonEscaped(onstart) + `}`)
			return b.String()
		}
		body := spec()
		must(t, len(body) > 300<<10 && len(body) <= launchapi.MaxCreateBytes, "the body is %d bytes", len(body))
		for _, key := range []string{"", "big-spec"} {
			st, _, out := launchPost(t, a, token, key, body)
			must(t, st == http.StatusCreated, "a spec at its limits (key %q): %d %s", key, st, snippet(out))
			r := decode[rentaljson.Rental](t, out)
			must(t, r.Name == name && len(r.Labels) == launch.MaxLabels && r.EnvSet && r.OnstartSet, "the rental's spec: %+v", r)
			var got launchstore.Secrets
			must(t, db.Tx(context.Background(), func(tx *gorm.DB) error {
				var err error
				got, err = launchstore.Open(tx, box, r.ID)
				return err
			}) == nil, "open the spec")
			must(t, got.Onstart == onstart && len(got.Env) == len(env), "the sealed spec differs from what was sent")
			for k, v := range env {
				must(t, got.Env[k] == v, "env %s differs", k)
			}
		}

		// Over the limit: 413, whether the length says so or the reader
		// reaches it.
		addr := strings.TrimPrefix(a.srv.URL, "http://")
		over := body[:len(body)-1] + strings.Repeat(" ", launchapi.MaxCreateBytes-len(body)+2) + "}"
		for _, key := range []string{"", "too-big"} {
			for _, length := range []int64{int64(len(over)), -1} {
				h := http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
				if key != "" {
					h.Set("Idempotency-Key", key)
				}
				res := rawRequest(t, addr, "POST", a.url(routenames.APIRentalsCreate), h, length, strings.NewReader(over))
				out := bodyOf(res)
				code, param, msg := errorCode(t, out)
				must(t, res.StatusCode == http.StatusRequestEntityTooLarge && code == "too_large" && param == "body" && strings.Contains(msg, "512 KiB"),
					"a body over the limit (key %q, length %d): %d %s", key, length, res.StatusCode, out)
			}
		}
	})
}
