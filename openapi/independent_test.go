package openapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// validateWithKin loads a document with kin-openapi, a validator
// independent of ours (validate.go compiles the schemas with
// santhosh-tekuri/jsonschema and checks answers against them; this checks
// the document itself against the OpenAPI specification of its version:
// 3.1 for openapi.json, 3.0 for Document30).
func validateWithKin(t *testing.T, doc []byte) error {
	t.Helper()
	loader := openapi3.NewLoader()
	d, err := loader.LoadFromData(doc)
	if err != nil {
		return err
	}
	return d.Validate(context.Background())
}

// docBreak is one way to break a document, and a part of the refusal
// it must cause.
type docBreak struct {
	name  string
	edit  func(doc map[string]any)
	error string
}

// TestDocumentsPassAnIndependentValidator runs both forms of the document
// through kin-openapi's validator, and shows on broken copies that it
// does refuse what it should, so a pass means something.
func TestDocumentsPassAnIndependentValidator(t *testing.T) {
	forms := []struct {
		name    string
		doc     []byte
		version string
	}{
		{"openapi.json", JSON(), "3.1.0"},
		{"Document30", Document30(), "3.0.3"},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			if err := validateWithKin(t, f.doc); err != nil {
				t.Fatalf("kin-openapi refuses %s: %v", f.name, err)
			}
			var v struct {
				OpenAPI string `json:"openapi"`
			}
			if err := json.Unmarshal(f.doc, &v); err != nil || v.OpenAPI != f.version {
				t.Fatalf("%s declares openapi %q, want %s (%v)", f.name, v.OpenAPI, f.version, err)
			}
		})
		breaks := []docBreak{
			{"a $ref to a missing schema", func(doc map[string]any) {
				schemas := asMap(asMap(doc["components"])["schemas"])
				schemas["Broken"] = map[string]any{"$ref": "#/components/schemas/NoSuchSchema"}
			}, "NoSuchSchema"},
			{"a path parameter not declared", func(doc map[string]any) {
				paths := asMap(doc["paths"])
				paths["/api/v1/broken/{id}"] = map[string]any{"get": map[string]any{
					"operationId": "broken",
					"responses":   map[string]any{"200": map[string]any{"description": "ok"}},
				}}
			}, "missing: [id]"},
			{"two operations with one id", func(doc map[string]any) {
				paths := asMap(doc["paths"])
				paths["/api/v1/broken"] = map[string]any{"get": map[string]any{
					"operationId": "listOffers",
					"responses":   map[string]any{"200": map[string]any{"description": "ok"}},
				}}
			}, "listOffers"},
			{"a type that does not exist", func(doc map[string]any) {
				schemas := asMap(asMap(doc["components"])["schemas"])
				schemas["Broken"] = map[string]any{"type": "integr"}
			}, "integr"},
		}
		if f.version == "3.0.3" {
			// The 3.0 form is checked by 3.0's rules: a 3.1 form the
			// conversion left behind would be refused.
			breaks = append(breaks, docBreak{"a 3.1 type list", func(doc map[string]any) {
				schemas := asMap(asMap(doc["components"])["schemas"])
				schemas["Broken"] = map[string]any{"type": []any{"string", "null"}}
			}, "Broken"})
		}
		for _, b := range breaks {
			t.Run(f.name+" with "+b.name+" is refused", func(t *testing.T) {
				var doc map[string]any
				if err := json.Unmarshal(f.doc, &doc); err != nil {
					t.Fatal(err)
				}
				b.edit(doc)
				broken, err := json.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				err = validateWithKin(t, broken)
				if err == nil {
					t.Fatalf("kin-openapi accepts %s with %s", f.name, b.name)
				}
				t.Logf("refused: %v", err)
				if !strings.Contains(err.Error(), b.error) {
					t.Fatalf("kin-openapi refuses %s with %s, but for another reason: %v", f.name, b.name, err)
				}
			})
		}
	}
}
