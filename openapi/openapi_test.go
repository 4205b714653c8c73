package openapi

import (
	"net/http"
	"testing"
)

// The document compiles, and the validator tells good answers from bad.
func TestValidatorCompilesAndChecks(t *testing.T) {
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Content-Type": {"application/json; charset=UTF-8"}}
	if err := v.CheckResponse("GET", "/api/v1/wallet", 200, h, []byte(`{"org_id":1,"balance_fen":5,"refundable_fen":0,"currency":"cny","runway":{"rate_fen_per_hour":0,"rentals_fen_per_hour":0,"storage_fen_per_hour":0,"running_rentals":0,"volumes":0,"lasts_seconds":null},"alerts":[]}`)); err != nil {
		t.Errorf("good wallet: %v", err)
	}
	if err := v.CheckResponse("GET", "/api/v1/wallet", 200, h, []byte(`{"org_id":1,"balance_fen":5,"currency":"cny","runway":{"rate_fen_per_hour":0,"rentals_fen_per_hour":0,"storage_fen_per_hour":0,"running_rentals":0,"volumes":0,"lasts_seconds":null},"alerts":[]}`)); err == nil {
		t.Error("a wallet without refundable_fen passed")
	}
	if err := v.CheckResponse("GET", "/api/v1/wallet", 200, h, []byte(`{"org_id":1,"balance_fen":5,"refundable_fen":0,"currency":"cny","runway":{"rate_fen_per_hour":0,"rentals_fen_per_hour":0,"storage_fen_per_hour":0,"running_rentals":0,"volumes":0,"lasts_seconds":null},"alerts":[],"extra":1}`)); err == nil {
		t.Error("an undocumented field passed")
	}
	if err := v.CheckResponse("GET", "/api/v1/wallet", 500, h, []byte(`{"error":{"code":"internal","message":"x"}}`)); err == nil {
		t.Error("an undocumented status passed")
	}
	if err := v.CheckResponse("GET", "/api/v1/nope", 404, h, []byte(`{}`)); err != nil {
		t.Errorf("404 on an undocumented path: %v", err)
	}
	if tpl, ok := v.Find("GET", "/api/v1/offers/12/quote"); !ok || tpl != "/api/v1/offers/{id}/quote" {
		t.Errorf("Find = %q %v", tpl, ok)
	}
	if err := v.CheckRequest("POST", "/api/v1/rentals", []byte(`{"offer_id":1,"gpus":1}`)); err != nil {
		t.Errorf("good rental request: %v", err)
	}
}

// Every operation flattens into something the docs page can show.
func TestOperations(t *testing.T) {
	ops := Operations()
	if len(ops) < 20 {
		t.Fatalf("only %d operations", len(ops))
	}
	for _, o := range ops {
		if o.ID == "" || o.Summary == "" || len(o.Responses) == 0 {
			t.Errorf("%s %s: id %q summary %q, %d responses", o.Method, o.Path, o.ID, o.Summary, len(o.Responses))
		}
		for _, r := range o.Responses {
			if r.Status[0] == '2' && o.Tag != "meta" && r.JSON && len(r.Fields) == 0 {
				t.Errorf("%s %s %s: no fields", o.Method, o.Path, r.Status)
			}
			for _, f := range r.Fields {
				if f.Description == "" && f.Type != "" && f.Depth == 0 {
					t.Errorf("%s %s %s: field %s has no description", o.Method, o.Path, r.Status, f.Name)
				}
			}
		}
	}
}
