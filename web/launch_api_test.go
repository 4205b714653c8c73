package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/agent"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/handlers/rentaljson"
	"suanli/images"
	"suanli/launch"
	"suanli/models"
	"suanli/models/supply"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/secrets"
)

// launchBox is the platform key's box (the registry credentials'), which
// seals a launch's environment and script too.
func launchBox(t *testing.T) *secrets.Box {
	t.Helper()
	k, err := secrets.ParseKey(secrets.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return k.Box(images.RegistryAuthPurpose)
}

// withLaunchBox gives the app a platform key.
func withLaunchBox(box *secrets.Box) func(*handlers.Handler) {
	return func(h *handlers.Handler) { h.Rentals.Credentials = box }
}

// openMarket makes the nodes of the model's offers healthy, as their
// agents' heartbeats would (the demo's GPUs keep their seeded states), and
// reloads the offer index.
func openMarket(t *testing.T, a *app, model string) {
	t.Helper()
	var nodes []int64
	must(t, a.db.R.Model(&models.Offer{}).Where("gpu_model = ? AND status = ?", model, models.OfferListed).Distinct().Pluck("node_id", &nodes).Error == nil, "nodes")
	must(t, len(nodes) > 2, "the demo has %d nodes of %s", len(nodes), model)
	must(t, a.db.W.Exec(`UPDATE nodes SET health = 'healthy', status = 'active' WHERE id IN ?`, nodes).Error == nil, "nodes healthy")
	must(t, a.db.W.Exec(`UPDATE gpus SET health = 'healthy' WHERE node_id IN ?`, nodes).Error == nil, "GPUs healthy")
	refreshMarket(t, a, nodes...)
}

// refreshMarket recounts the nodes' free GPUs into their offers and
// reloads the index, as the writers and the index's refresh loop do.
func refreshMarket(t *testing.T, a *app, nodes ...int64) {
	t.Helper()
	err := a.db.Tx(context.Background(), func(tx *gorm.DB) error {
		for _, n := range nodes {
			if err := supply.RefreshNodeAvailability(tx, n, a.db.Now().UTC()); err != nil {
				return err
			}
		}
		return models.BumpOffersVersion(tx)
	})
	must(t, err == nil, "refresh: %v", err)
	_, err = a.index.Refresh(context.Background())
	must(t, err == nil, "index: %v", err)
}

// catalogue is GET /api/v1/catalog's answer.
type catalogue struct {
	Version  int64          `json:"version"`
	Currency string         `json:"currency"`
	Offers   []launch.Entry `json:"offers"`
}

// launchPost posts a create with the token and an optional Idempotency-Key.
func launchPost(t *testing.T, a *app, token, key, body string) (int, http.Header, string) {
	t.Helper()
	st, h, out, err := idemPost(a, "/api/v1/rentals", token, key, body)
	must(t, err == nil, "POST /api/v1/rentals: %v", err)
	return st, h, out
}

// The catalogue is the whole market in rows that say what the offers
// say, cheapest first; its weak ETag, the same for the plain and the
// gzip answer, answers If-None-Match (compared weakly) with 304 and no
// body until the market changes, and names the query; instance types
// count what could launch.
func TestCatalogueAndInstanceTypes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		openMarket(t, a, "rtx-4090")
		path := a.url(routenames.APICatalog)

		res, body := a.get(path + query("from", "chengdu"))
		must(t, res.StatusCode == 200, "catalog: %d %s", res.StatusCode, snippet(body))
		etag := res.Header.Get("ETag")
		must(t, strings.HasPrefix(etag, `W/"cat-`) && res.Header.Get("Cache-Control") == "no-cache", "headers %v", res.Header)
		res, _ = a.get(path+query("from", "chengdu"), "Accept-Encoding", "gzip")
		must(t, res.StatusCode == 200 && res.Header.Get("Content-Encoding") == "gzip" && res.Header.Get("ETag") == etag,
			"the gzip answer: %d %q, tag %s, want %s", res.StatusCode, res.Header.Get("Content-Encoding"), res.Header.Get("ETag"), etag)
		cat := decode[catalogue](t, body)
		must(t, cat.Currency == "cny" && len(cat.Offers) == a.index.Len() && cat.Version > 0, "%d offers of %d, version %d", len(cat.Offers), a.index.Len(), cat.Version)
		must(t, slices.IsSortedFunc(cat.Offers, func(x, y launch.Entry) int { return int(x.PriceFen - y.PriceFen) }), "not cheapest first")
		o := rtxOffer(t, db)
		i := slices.IndexFunc(cat.Offers, func(e launch.Entry) bool { return e.OfferID == o.ID })
		must(t, i >= 0, "the RTX 4090 offer is missing")
		e := cat.Offers[i]
		must(t, e.GPU == "rtx-4090" && e.MaxGPUs == o.MaxGPUs && e.AvailableGPUs == o.AvailableGPUs && e.VRAMGB == 24 && e.VCPUPerGPU == o.VCPUPerGPU &&
			e.RAMGBPerGPU == o.RAMGBPerGPU && e.DiskGB == o.DiskGB && e.PriceFen == o.PricePerGPUHourFen &&
			e.OffpeakPriceFen == pricing.Discounted(o.PricePerGPUHourFen, o.OffpeakDiscountPct) && e.NodeID == o.NodeID && e.City == "chengdu" &&
			e.Datacenter == "cd-hitech" && e.Region != "" && e.Simulated && e.InterruptibleFloorFen == nil && e.LatencyMS != nil,
			"the RTX 4090 offer's row: %+v", e)

		// The same query with the tag: 304, no body. Another query, another tag.
		res, body = a.get(path+query("from", "chengdu"), "If-None-Match", etag)
		must(t, res.StatusCode == http.StatusNotModified && body == "" && res.Header.Get("ETag") == etag, "revalidate: %d %q", res.StatusCode, body)
		res, _ = a.get(path+query("from", "chengdu"), "If-None-Match", `"other", `+strings.TrimPrefix(etag, "W/"))
		must(t, res.StatusCode == http.StatusNotModified, "a list with the tag's strong spelling (weak comparison): %d", res.StatusCode)
		res, _ = a.get(path+query("from", "chengdu"), "If-None-Match", `W/"other"`)
		must(t, res.StatusCode == 200, "another tag: %d", res.StatusCode)
		res, body = a.get(path+query("from", "shanghai"), "If-None-Match", etag)
		must(t, res.StatusCode == 200 && res.Header.Get("ETag") != etag, "another query with the tag: %d", res.StatusCode)
		res, body = a.get(path + query("gpu", "rtx-4090", "available", "1"))
		only := decode[catalogue](t, body)
		must(t, res.StatusCode == 200 && len(only.Offers) > 2, "rtx-4090 available: %d %d", res.StatusCode, len(only.Offers))
		for _, e := range only.Offers {
			must(t, e.GPU == "rtx-4090" && e.AvailableGPUs > 0 && e.LatencyMS == nil, "filtered row %+v", e)
		}
		for _, bad := range []string{"from", "gpu", "available"} {
			res, body := a.get(path + query(bad, "nowhere"))
			code, param, _ := errorCode(t, body)
			must(t, res.StatusCode == 400 && code == "invalid" && param == bad, "bad %s: %d %s", bad, res.StatusCode, body)
		}

		// The market moves: the old tag is stale.
		must(t, db.W.Exec(`UPDATE gpus SET state = 'busy' WHERE node_id = ?`, o.NodeID).Error == nil, "take the GPUs")
		refreshMarket(t, a, o.NodeID)
		res, body = a.get(path+query("from", "chengdu"), "If-None-Match", etag)
		must(t, res.StatusCode == 200 && res.Header.Get("ETag") != etag, "after a change: %d", res.StatusCode)
		cat = decode[catalogue](t, body)
		i = slices.IndexFunc(cat.Offers, func(e launch.Entry) bool { return e.OfferID == o.ID })
		must(t, i >= 0 && cat.Offers[i].AvailableGPUs == 0, "the taken offer still shows free GPUs")

		// Instance types: one per GPU count an offer takes.
		res, body = a.get(a.url(routenames.APIInstanceTypes))
		must(t, res.StatusCode == 200, "instance types: %d", res.StatusCode)
		var its struct {
			Types []launch.TypeSummary `json:"instance_types"`
		}
		must(t, json.Unmarshal([]byte(body), &its) == nil, "decode %s", snippet(body))
		byName := map[string]launch.TypeSummary{}
		for _, it := range its.Types {
			byName[it.Name] = it
		}
		two := byName["rtx-4090.2x"]
		wantInstances, wantOffers := 0, 0
		var cheapest int64
		for _, e := range only.Offers { // the rows before the change, but o's
			if e.OfferID == o.ID {
				wantOffers++ // still serves the type, with nothing free
				continue
			}
			if e.MaxGPUs >= 2 {
				wantOffers++
				wantInstances += e.AvailableGPUs / 2
				if e.AvailableGPUs >= 2 && cheapest == 0 {
					cheapest = e.PriceFen
				}
			}
		}
		must(t, two.GPU == "rtx-4090" && two.GPUs == 2 && two.VRAMGB == 24 && two.AvailableInstances == wantInstances && two.Offers == wantOffers &&
			two.MinAvailablePriceFen != nil && *two.MinAvailablePriceFen == cheapest && slices.Contains(two.Cities, "chengdu"),
			"rtx-4090.2x: %+v, want %d instances on %d offers from %d", two, wantInstances, wantOffers, cheapest)
		_, ok := byName["rtx-4090.9x"]
		must(t, !ok && byName["rtx-4090.8x"].Offers > 0, "the types stop at the largest offer")
	})
}

// Launching by instance type rents the cheapest offer of the type with
// the GPUs free, never on an excluded node, tries the next when one was
// taken meanwhile (the index had not seen it), and is no_capacity when
// the market is full; a named offer that is full is offer_taken; no
// balance is 402 insufficient_funds. Labels and the name find the
// rentals again; every bad input is a 400 naming its field, renting
// nothing; Idempotency-Key replays a launch.
func TestLaunchByInstanceType(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newAppWith(t, db, withLaunchBox(launchBox(t)))
		openMarket(t, a, "rtx-4090")
		org, token := apiToken(t, a, "launcher@example.com")
		key := testSSHKey(t)
		_, list := a.index.ByPrice(false)
		var cands []launch.Entry // rtx-4090.2x, cheapest first
		for _, o := range list {
			if o.GPUModel() == "rtx-4090" && o.MaxGPUs() >= 2 && o.AvailableGPUs() >= 2 {
				cands = append(cands, launch.Entry{OfferID: o.ID, NodeID: o.NodeID, AvailableGPUs: o.AvailableGPUs(), PriceFen: o.PricePerGPUHourFen()})
			}
		}
		must(t, len(cands) >= 4, "%d candidates", len(cands))
		launchBody := func(extra string) string {
			return `{"instance_type":"rtx-4090.2x","ssh_public_key":"` + key + `"` + extra + `}`
		}
		refused := func(name, tok, body string, status int, code, param string) {
			t.Helper()
			before := rentalsOf(t, db, org)
			st, _, out := launchPost(t, a, tok, "", body)
			gotCode, gotParam, _ := errorCode(t, out)
			if st != status || gotCode != code || gotParam != param {
				t.Errorf("%s: %d %s %s, want %d %s %s (%s)", name, st, gotCode, gotParam, status, code, param, snippet(out))
			}
			if n := rentalsOf(t, db, org); n != before {
				t.Errorf("%s rented: %d rentals, was %d", name, n, before)
			}
		}
		refused("an offer and a type", token, launchBody(`,"offer_id":`+idParam(cands[0].OfferID)), 400, "invalid", "instance_type")
		refused("an unknown type", token, `{"instance_type":"rtx-9999.2x","ssh_public_key":"`+key+`"}`, 400, "invalid", "instance_type")
		refused("a malformed type", token, `{"instance_type":"rtx-4090","ssh_public_key":"`+key+`"}`, 400, "invalid", "instance_type")
		refused("gpus beside a type", token, launchBody(`,"gpus":3`), 400, "invalid", "gpus")
		refused("an unknown region", token, launchBody(`,"region":"atlantis"`), 400, "invalid", "region")
		refused("an unknown city", token, launchBody(`,"city":"atlantis"`), 400, "invalid", "city")
		refused("a node id below 1", token, launchBody(`,"exclude_nodes":[0]`), 400, "invalid", "exclude_nodes")
		refused("a region without a type", token, `{"offer_id":`+idParam(cands[0].OfferID)+`,"region":"cn-southwest","ssh_public_key":"`+key+`"}`, 400, "invalid", "instance_type")
		refused("a bad label key", token, launchBody(`,"labels":{"Bad Key":"x"}`), 400, "invalid", "labels.Bad Key")
		refused("a label value too long", token, launchBody(`,"labels":{"k":"`+strings.Repeat("v", 256)+`"}`), 400, "invalid", "labels.k")
		refused("a bad env name", token, launchBody(`,"env":{"1X":"y"}`), 400, "invalid", "env.1X")
		refused("the runtime's GPU selector", token, launchBody(`,"env":{"NVIDIA_VISIBLE_DEVICES":"all"}`), 400, "invalid", "env.NVIDIA_VISIBLE_DEVICES")
		refused("a script over 16 KiB", token, launchBody(`,"onstart":"`+strings.Repeat("#", launch.MaxOnstartBytes+1)+`"`), 400, "invalid", "onstart")
		refused("labels as a list", token, launchBody(`,"labels":["a"]`), 400, "invalid", "labels")
		refused("ports as a string", token, launchBody(`,"ports":"8000"`), 400, "invalid", "ports")
		refused("an unknown field", token, launchBody(`,"RentFields":{}`), 400, "invalid", "body")

		// No balance: 402, before any GPU is taken.
		brokeUser, brokeOrg := fundedRenter(t, db, "broke-launcher@example.com", testPassword, 0)
		brokeToken, _, err := (&accounts.Service{DB: db}).CreateAPIToken(context.Background(), brokeUser, "broke")
		must(t, err == nil, "token: %v", err)
		for _, body := range []string{launchBody(""), `{"offer_id":` + idParam(cands[0].OfferID) + `,"gpus":2,"ssh_public_key":"` + key + `"}`} {
			st, _, out := launchPost(t, a, brokeToken, "", body)
			code, param, msg := errorCode(t, out)
			must(t, st == http.StatusPaymentRequired && code == "insufficient_funds" && param == "balance" && strings.Contains(msg, "top up"),
				"no balance: %d %s", st, out)
		}
		must(t, rentalsOf(t, db, brokeOrg) == 0, "a refused launch rented")

		// The cheapest but on an excluded node: the next.
		st, _, body := launchPost(t, a, token, "", launchBody(`,"exclude_nodes":[`+idParam(cands[0].NodeID)+`],"name":"head","labels":{"cluster":"c1","role":"head"}`))
		must(t, st == http.StatusCreated, "launch: %d %s", st, body)
		head := decode[rentaljson.Rental](t, body)
		must(t, head.OfferID == cands[1].OfferID && head.GPUs == 2 && head.Node != nil && head.Node.ID == cands[1].NodeID, "launched on %+v, want offer %d", head, cands[1].OfferID)
		must(t, head.Name == "head" && head.Labels["cluster"] == "c1" && head.Labels["role"] == "head" && head.State == "pending" &&
			head.StatusMessage != "" && head.SSH == nil && !head.EnvSet && !head.OnstartSet, "the rental's spec: %s", body)

		// The cheapest offer's GPUs are taken behind the index's back, and
		// the next has fewer left than the type: the launch moves on.
		must(t, db.W.Exec(`UPDATE gpus SET state = 'busy' WHERE node_id = ?`, cands[0].NodeID).Error == nil, "take the cheapest")
		free := map[int64]int{}
		for _, c := range cands {
			free[c.OfferID] = c.AvailableGPUs
		}
		free[cands[0].OfferID], free[cands[1].OfferID] = 0, free[cands[1].OfferID]-2
		want := cands[slices.IndexFunc(cands, func(c launch.Entry) bool { return free[c.OfferID] >= 2 })]
		st, h, body := launchPost(t, a, token, "launch-worker-1", launchBody(`,"name":"worker","labels":{"cluster":"c1","role":"worker"}`))
		must(t, st == http.StatusCreated, "failover launch: %d %s", st, body)
		worker := decode[rentaljson.Rental](t, body)
		must(t, worker.OfferID == want.OfferID, "the failover launch rented offer %d, want %d", worker.OfferID, want.OfferID)
		st, h, again := launchPost(t, a, token, "launch-worker-1", launchBody(`,"name":"worker","labels":{"cluster":"c1","role":"worker"}`))
		must(t, st == http.StatusCreated && h.Get("Idempotent-Replayed") == "true" && again == body, "the same key again: %d %s", st, again)

		// Found again by labels and name.
		ids := func(q string) []int64 {
			t.Helper()
			st, _, body := apiCall(a, token, "GET", a.url(routenames.APIRentalsList)+q, "")
			must(t, st == 200, "list %s: %d %s", q, st, body)
			var l struct {
				Rentals []rentaljson.Rental `json:"rentals"`
				Total   int                 `json:"total"`
			}
			must(t, json.Unmarshal([]byte(body), &l) == nil && l.Total == len(l.Rentals), "list %s: %s", q, body)
			out := []int64{}
			for _, r := range l.Rentals {
				out = append(out, r.ID)
			}
			return out
		}
		must(t, slices.Equal(ids(query("label", "cluster=c1")), []int64{worker.ID, head.ID}), "by cluster: %v", ids(query("label", "cluster=c1")))
		must(t, slices.Equal(ids(query("label", "cluster=c1", "label", "role=head")), []int64{head.ID}), "by cluster and role")
		must(t, slices.Equal(ids(query("label", "cluster=c1", "name", "worker")), []int64{worker.ID}), "by cluster and name")
		must(t, len(ids(query("label", "cluster=c2"))) == 0, "another cluster")
		st, _, body = apiCall(a, token, "GET", a.url(routenames.APIRentalsList)+query("label", "cluster"), "")
		code, param, _ := errorCode(t, body)
		must(t, st == 400 && code == "invalid" && param == "label", "a label without =: %d %s", st, body)

		// A named offer with fewer free GPUs than asked: offer_taken.
		refused("a full named offer", token, `{"offer_id":`+idParam(cands[0].OfferID)+`,"gpus":2,"ssh_public_key":"`+key+`"}`, 409, "offer_taken", "")

		// The market full (the index not told): every candidate is taken.
		must(t, db.W.Exec(`UPDATE gpus SET state = 'busy' WHERE gpu_model = 'rtx-4090'`).Error == nil, "fill the market")
		refused("a full market the index has not seen", token, launchBody(""), 409, "no_capacity", "instance_type")
		var nodes []int64
		must(t, db.R.Model(&models.Offer{}).Where("gpu_model = 'rtx-4090'").Pluck("node_id", &nodes).Error == nil, "nodes")
		refreshMarket(t, a, nodes...)
		refused("a full market", token, launchBody(`,"region":"cn-southwest"`), 409, "no_capacity", "instance_type")
		_, body = a.get(a.url(routenames.APIInstanceTypes))
		must(t, strings.Contains(body, `"name":"rtx-4090.2x"`), "the type is still listed, with nothing free: %s", snippet(body))
		var its struct {
			Types []launch.TypeSummary `json:"instance_types"`
		}
		must(t, json.Unmarshal([]byte(body), &its) == nil, "decode")
		for _, it := range its.Types {
			if it.GPU == "rtx-4090" {
				must(t, it.AvailableInstances == 0 && it.MinAvailablePriceFen == nil, "%s in a full market: %+v", it.Name, it)
			}
		}
	})
}

// envRecorder is the simulated launcher, remembering the environment and
// script each launch came with, by rental.
type envRecorder struct {
	*agent.SimulatedLauncher
	mu       sync.Mutex
	env      map[int64][]map[string]string
	onstarts map[int64][]string
}

func (l *envRecorder) Launch(ctx context.Context, spec agent.LaunchSpec) (*agent.Access, error) {
	l.mu.Lock()
	l.env[spec.RentalID] = append(l.env[spec.RentalID], spec.Env)
	l.onstarts[spec.RentalID] = append(l.onstarts[spec.RentalID], spec.Onstart)
	l.mu.Unlock()
	return l.SimulatedLauncher.Launch(ctx, spec)
}

func (l *envRecorder) launches(rentalID int64) ([]map[string]string, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.env[rentalID]), slices.Clone(l.onstarts[rentalID])
}

// A launch's environment and script reach the node's agent on every
// launch of the rental — the first, and a start after a stop — and
// nothing else: no API answer, no stored row (agent_tasks.payload
// included) holds them; the rental says only that it has them. The
// launcher follows its state to running and reads its SSH endpoint;
// release forgets them.
func TestLaunchEnvReachesOnlyTheAgent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, svc := rentalsAppOn(t, db, withLaunchBox(launchBox(t)))
		o := rtxOffer(t, db)
		rec := &envRecorder{SimulatedLauncher: &agent.SimulatedLauncher{Host: "rtx.sim.invalid"}, env: map[int64][]map[string]string{}, onstarts: map[int64][]string{}}
		startAgentWith(t, a, svc, o.NodeID, rec)
		refreshMarket(t, a, o.NodeID)
		_, token := apiToken(t, a, "env-launcher@example.com")
		const secretValue, script = "hf_env-s3cr3t-9f1c", "#!/bin/sh\necho onstart-s3cr3t-77ab > /workspace/ran\n"
		body := fmt.Sprintf(`{"offer_id":%d,"gpus":1,"ssh_public_key":%q,"name":"trainer","labels":{"cluster":"env"},"env":{"HF_TOKEN":%q,"MODE":"train"},"onstart":%q}`,
			o.ID, testSSHKey(t), secretValue, script)
		secretsIn := func(s string) bool { return strings.Contains(s, "s3cr3t") }

		st, _, out := launchPost(t, a, token, "env-1", body)
		must(t, st == http.StatusCreated && !secretsIn(out), "launch: %d %s", st, out)
		r := decode[rentaljson.Rental](t, out)
		must(t, r.EnvSet && r.OnstartSet && r.Name == "trainer", "the rental: %s", out)
		waitRentalStatus(t, a, r.ID, models.RentalRunning)

		st, _, out = apiCall(a, token, "GET", a.url(routenames.APIRentalsShow, idParam(r.ID)), "")
		must(t, st == 200 && !secretsIn(out), "show: %d %s", st, out)
		r = decode[rentaljson.Rental](t, out)
		must(t, r.State == "running" && r.SSH != nil && r.SSH.Host == "rtx.sim.invalid" && r.SSH.Port > 0 && r.SSH.User != "" &&
			strings.HasPrefix(r.StatusMessage, "Running on node "), "running: %s", out)
		st, _, out = apiCall(a, token, "GET", a.url(routenames.APIRentalsList)+query("label", "cluster=env"), "")
		must(t, st == 200 && !secretsIn(out) && strings.Contains(out, `"env_set":true`), "list: %d %s", st, out)
		envs, onstarts := rec.launches(r.ID)
		must(t, len(envs) == 1 && envs[0]["HF_TOKEN"] == secretValue && envs[0]["MODE"] == "train" && onstarts[0] == script,
			"the agent's launch: %v %q", envs, onstarts)

		// A stop and a start launch it again, with the same.
		st, _, out = apiCall(a, token, "POST", a.url(routenames.APIRentalsStop, idParam(r.ID)), "")
		must(t, st == 200, "stop: %d %s", st, out)
		waitRentalStatus(t, a, r.ID, models.RentalStopped)
		st, _, out = apiCall(a, token, "GET", a.url(routenames.APIRentalsShow, idParam(r.ID)), "")
		r = decode[rentaljson.Rental](t, out)
		must(t, r.State == "stopped" && r.SSH == nil && strings.HasPrefix(r.StatusMessage, "Stopped: stopped by the renter"), "stopped: %s", out)
		st, _, out = apiCall(a, token, "POST", a.url(routenames.APIRentalsStart, idParam(r.ID)), "")
		must(t, st == 200 && !secretsIn(out), "start: %d %s", st, out)
		waitRentalStatus(t, a, r.ID, models.RentalRunning)
		envs, onstarts = rec.launches(r.ID)
		must(t, len(envs) == 2 && envs[1]["HF_TOKEN"] == secretValue && onstarts[1] == script, "the second launch: %v %q", envs, onstarts)

		// Stored nowhere in plain text: not the rental, not its tasks'
		// payloads, not the jobs, not the idempotency record.
		var payloads []string
		must(t, db.R.Model(&models.AgentTask{}).Where("rental_id = ?", r.ID).Pluck("payload", &payloads).Error == nil && len(payloads) >= 2, "tasks: %d", len(payloads))
		if found := dbtest.Find(t, db, []byte("s3cr3t")); len(found) > 0 {
			t.Fatalf("a secret is stored in plain text in %v", found)
		}

		// Released: forgotten.
		st, _, out = apiCall(a, token, "POST", a.url(routenames.APIRentalsRelease, idParam(r.ID)), `{"delete_volume":true}`)
		must(t, st == 200, "release: %d %s", st, out)
		waitRentalStatus(t, a, r.ID, models.RentalStopped)
		st, _, out = apiCall(a, token, "GET", a.url(routenames.APIRentalsShow, idParam(r.ID)), "")
		r = decode[rentaljson.Rental](t, out)
		must(t, st == 200 && r.State == "released" && !r.EnvSet && !r.OnstartSet && r.Labels["cluster"] == "env" && strings.HasPrefix(r.StatusMessage, "Released"),
			"released: %s", out)
	})
}

// A server without a platform key keeps no secrets: a launch with env or
// onstart is a 400 naming the field, and nothing is rented; one without
// them (a name and labels) launches.
func TestLaunchSecretsNeedAPlatformKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, base := idemRenter(t, a, "no-key@example.com")
		with := func(extra string) string { return strings.TrimSuffix(base, "}") + "," + extra + "}" }
		for field, extra := range map[string]string{"env": `"env":{"A":"b"}`, "onstart": `"onstart":"echo hi"`} {
			st, _, out := launchPost(t, a, token, "", with(extra))
			code, param, _ := errorCode(t, out)
			must(t, st == 400 && code == "invalid" && param == field, "%s without a key: %d %s", field, st, out)
		}
		must(t, rentalsOf(t, db, org) == 0, "a refused launch rented")
		st, _, out := launchPost(t, a, token, "", with(`"name":"plain","labels":{"cluster":"k"}`))
		must(t, st == http.StatusCreated && strings.Contains(out, `"labels":{"cluster":"k"}`) && strings.Contains(out, `"env_set":false`), "a launch without secrets: %d %s", st, out)
	})
}
