package standingorders_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/supply"
	"suanli/offers"
	"suanli/openapi"
	"suanli/rentals"
	"suanli/web"
)

// The API through the real router, every answer checked against the
// OpenAPI document: place (201, or 422 naming each bad field with nothing
// stored), list, and delete (another organisation's order is 404).

type noJobs struct{}

func (noJobs) EnqueueProvision(context.Context, *sql.Tx, int64) error { return nil }
func (noJobs) EnqueueMarket(context.Context, *sql.Tx) error           { return nil }

type api struct {
	t   *testing.T
	srv *httptest.Server
	v   *openapi.Validator
}

// call sends a JSON request with the bearer token and checks the answer
// (and, when accepted, the request) against the document.
func (a *api) call(method, path, token, body string) (int, map[string]any) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", "en")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if err := a.v.CheckResponse(method, req.URL.Path, res.StatusCode, res.Header, b); err != nil {
		a.t.Errorf("openapi: %v", err)
	}
	if res.StatusCode/100 == 2 && body != "" {
		if err := a.v.CheckRequest(method, req.URL.Path, []byte(body)); err != nil {
			a.t.Errorf("openapi: the accepted request: %v", err)
		}
	}
	var out map[string]any
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			a.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
		}
	}
	return res.StatusCode, out
}

func sshKey(t *testing.T) string {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

func TestStandingOrdersAPI(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		acc := &accounts.Service{DB: db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
		token := func(email string) (string, int64) {
			u, err := acc.CreateUser(ctx, email, "renter-pass-2026", "", false)
			if err != nil {
				t.Fatal(err)
			}
			tok, _, err := acc.CreateAPIToken(ctx, u, "laptop")
			if err != nil {
				t.Fatal(err)
			}
			orgs, err := db.OrgsOfUser(ctx, u.ID)
			if err != nil || len(orgs) == 0 {
				t.Fatalf("organisations: %v", err)
			}
			return tok, orgs[0].Org.ID
		}
		mine, orgID := token("renter@example.com")
		theirs, _ := token("other@example.com")
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, orgID, 1_000_000, "promo_credit", "test funds", nil, nil, time.Now())
		}); err != nil {
			t.Fatal(err)
		}
		wallet := &billing.Wallet{DB: db}
		rs := &rentals.Service{DB: db, Wallet: wallet, Hub: fleet.NewHub(), Jobs: noJobs{}, BaseURL: "http://suanli.test"}
		ix := offers.NewIndex(db)
		if _, err := ix.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(web.New(&handlers.Handler{DB: db, Index: ix, Accounts: acc, Sessions: web.NewSessions(db, false), Wallet: wallet, Rentals: rs}, web.Options{}))
		t.Cleanup(srv.Close)
		v, err := openapi.NewValidator()
		if err != nil {
			t.Fatal(err)
		}
		a := &api{t: t, srv: srv, v: v}
		// The B200 offer: its node's GPUs healthy, all busy.
		var b200 models.Offer
		if err := db.R.Where("gpu_model = ?", "b200").First(&b200).Error; err != nil {
			t.Fatal(err)
		}
		db.W.Model(&models.Node{}).Where("id = ?", b200.NodeID).Update("health", models.NodeHealthy)
		db.W.Model(&models.GPU{}).Where("node_id = ?", b200.NodeID).Updates(map[string]any{"health": models.GPUHealthy, "state": models.GPUBusy})
		refresh := func() {
			if err := db.Tx(ctx, func(tx *gorm.DB) error { return supply.RefreshNodeAvailability(tx, b200.NodeID, time.Now()) }); err != nil {
				t.Fatal(err)
			}
		}
		refresh()
		key := sshKey(t)
		expires := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
		good := fmt.Sprintf(`{"filters":{"gpu":"b200","city":"frankfurt","max_price_fen":9000},"gpus":2,"action":"rent","ssh_public_key":%q,"expires_at":%q}`, key, expires)
		const path = "/api/v1/standing-orders"

		if st, _ := a.call("GET", path, "", ""); st != http.StatusUnauthorized {
			t.Fatalf("without a token: %d, want 401", st)
		}
		// Bad input: 422 naming every bad field, nothing stored.
		for _, c := range []struct{ body, field string }{
			{`{"filters":{"gpu":"b200"},"gpus":2,"action":"rent","ssh_public_key":"` + key + `","expires_at":"` + expires + `"}`, "filters.max_price_fen"},
			{`{"filters":{"gpu":"nope","max_price_fen":9000},"gpus":2,"action":"rent","ssh_public_key":"` + key + `","expires_at":"` + expires + `"}`, "filters.gpu"},
			{`{"filters":{"gpu":"b200","max_price_fen":9000},"gpus":2,"action":"rent","ssh_public_key":"` + key + `","expires_at":"tomorrow"}`, "expires_at"},
			{`{"filters":{"gpu":"b200","max_price_fen":9000},"gpus":2,"action":"rent","ssh_public_key":"` + key + `"}`, "expires_at"},
			{`{"filters":{"gpu":"b200","max_price_fen":9000},"gpus":2,"action":"rent","expires_at":"` + expires + `"}`, "ssh_public_key"},
			{`{"filters":{"gpu":"b200","max_price_fen":9000},"gpus":"2","action":"rent","expires_at":"` + expires + `"}`, "gpus"},
			{`{"filters":{"gpu":"b200","max_price_fen":"90"},"gpus":2,"action":"rent","expires_at":"` + expires + `"}`, "filters.max_price_fen"},
			{`{"filters":{"gpu":"b200","max_price_fen":9000},"gpus":2,"action":"sell","expires_at":"` + expires + `"}`, "action"},
		} {
			st, out := a.call("POST", path, mine, c.body)
			e, _ := out["error"].(map[string]any)
			if st != http.StatusUnprocessableEntity || e == nil || e["code"] != "invalid" || !strings.Contains(fmt.Sprint(e["fields"]), c.field) {
				t.Errorf("%s: %d %v, want 422 naming %s", c.body, st, out, c.field)
			}
		}
		if st, out := a.call("GET", path, mine, ""); st != 200 || out["total"] != float64(0) {
			t.Fatalf("after refused orders: %d %v, want none stored", st, out)
		}

		// No free GPU: open.
		st, out := a.call("POST", path, mine, good)
		if st != http.StatusCreated || out["status"] != "open" || out["rental_id"] != nil || out["action"] != "rent" || out["gpus"] != float64(2) {
			t.Fatalf("placed: %d %v, want 201 open", st, out)
		}
		f, _ := out["filters"].(map[string]any)
		if f["gpu"] != "b200" || f["city"] != "frankfurt" || f["max_price_fen"] != float64(9000) || f["interruptible"] != false {
			t.Fatalf("filters %v", f)
		}
		openID := int64(out["id"].(float64))
		if st, out := a.call("GET", path+"?status=open", mine, ""); st != 200 || out["total"] != float64(1) || out["org_id"] != float64(orgID) {
			t.Fatalf("list: %d %v", st, out)
		}
		if st, _ := a.call("GET", path+"?status=cancelled", mine, ""); st != http.StatusBadRequest {
			t.Fatalf("an unknown status: %d, want 400", st)
		}
		// Another organisation's order is not there for them.
		if st, _ := a.call("DELETE", fmt.Sprintf("%s/%d", path, openID), theirs, ""); st != http.StatusNotFound {
			t.Fatalf("another organisation's delete: %d, want 404", st)
		}
		if st, out := a.call("GET", path, theirs, ""); st != 200 || out["total"] != float64(0) {
			t.Fatalf("another organisation's list: %d %v", st, out)
		}
		st, out = a.call("DELETE", fmt.Sprintf("%s/%d", path, openID), mine, "")
		if st != 200 || out["status"] != "open" {
			t.Fatalf("delete: %d %v, want 200, the order as it stood (open)", st, out)
		}
		if st, _ := a.call("DELETE", fmt.Sprintf("%s/%d", path, openID), mine, ""); st != http.StatusNotFound {
			t.Fatalf("deleting twice: %d, want 404", st)
		}
		// Two GPUs free: an order placed now rents at once.
		db.W.Exec(`UPDATE gpus SET state = 'free' WHERE id IN (SELECT id FROM gpus WHERE node_id = ? ORDER BY idx LIMIT 2)`, b200.NodeID)
		refresh()
		st, out = a.call("POST", path, mine, good)
		if st != http.StatusCreated || out["status"] != "filled" || out["rental_id"] == nil || out["offer_id"] != float64(b200.ID) || out["ended_at"] == nil {
			t.Fatalf("placed with GPUs free: %d %v, want filled with a rental", st, out)
		}
		// Interruptible and notify orders show their own fields.
		st, out = a.call("POST", path, mine, fmt.Sprintf(`{"filters":{"gpu":"h100-sxm","interruptible":true,"bid_per_gpu_hour_fen":100},"gpus":1,"action":"notify","expires_at":%q}`, expires))
		f, _ = out["filters"].(map[string]any)
		if st != http.StatusCreated || out["status"] != "open" || f["bid_per_gpu_hour_fen"] != float64(100) || f["max_price_fen"] != nil || out["sla"] != nil || out["image"] != nil {
			t.Fatalf("an interruptible notify order: %d %v", st, out)
		}
	})
}
