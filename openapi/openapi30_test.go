package openapi

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// convertSchema30 converts one schema, placed in a minimal 3.1 document,
// and returns its 3.0 form or the conversion's error.
func convertSchema30(t *testing.T, schema string) (map[string]any, error) {
	t.Helper()
	src := `{"openapi": "3.1.0", "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": {"title": "t", "version": "1"}, "paths": {},
		"components": {"schemas": {"S": ` + schema + `, "T": {"type": "object"}}}}`
	out, err := convert30([]byte(src))
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	return asMap(asMap(asMap(doc["components"])["schemas"])["S"]), nil
}

// TestConvert30Schemas shows each 3.1 form and the 3.0 form it becomes.
func TestConvert30Schemas(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"a type list with null is nullable",
			`{"type": ["integer", "null"], "minimum": 0}`,
			`{"type": "integer", "nullable": true, "minimum": 0}`},
		{"const is a one-value enum",
			`{"type": "string", "const": "cny"}`,
			`{"type": "string", "enum": ["cny"]}`},
		{"a oneOf of a $ref and null is a nullable allOf of the $ref",
			`{"description": "d", "oneOf": [{"$ref": "#/components/schemas/T"}, {"type": "null"}]}`,
			`{"description": "d", "nullable": true, "allOf": [{"$ref": "#/components/schemas/T"}]}`},
		{"null first works the same",
			`{"anyOf": [{"type": "null"}, {"$ref": "#/components/schemas/T"}]}`,
			`{"nullable": true, "allOf": [{"$ref": "#/components/schemas/T"}]}`},
		{"an inline branch left alone is merged in",
			`{"description": "d", "oneOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}`,
			`{"description": "d", "nullable": true, "type": "string", "format": "date-time"}`},
		{"several branches left stay a oneOf, nullable",
			`{"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}`,
			`{"nullable": true, "oneOf": [{"type": "string"}, {"type": "integer"}]}`},
		{"keywords beside a $ref move it into an allOf",
			`{"$ref": "#/components/schemas/T", "description": "d"}`,
			`{"description": "d", "allOf": [{"$ref": "#/components/schemas/T"}]}`},
		{"a lone $ref stays",
			`{"$ref": "#/components/schemas/T"}`,
			`{"$ref": "#/components/schemas/T"}`},
		{"schemas inside are converted",
			`{"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "array", "items": {"const": 1}}}, "additionalProperties": {"type": ["number", "null"]}}`,
			`{"type": "object", "properties": {"a": {"type": "string", "nullable": true}, "b": {"type": "array", "items": {"enum": [1]}}}, "additionalProperties": {"type": "number", "nullable": true}}`},
		{"a numeric exclusive bound is 3.0's boolean one",
			`{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1.5}`,
			`{"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1.5, "exclusiveMaximum": true}`},
		{"an inclusive minimum above the exclusive one stays alone",
			`{"type": "integer", "minimum": 5, "exclusiveMinimum": 0}`,
			`{"type": "integer", "minimum": 5}`},
		{"an exclusive minimum above the inclusive one replaces it",
			`{"type": "number", "minimum": 0, "exclusiveMinimum": 0.5}`,
			`{"type": "number", "minimum": 0.5, "exclusiveMinimum": true}`},
		{"equal minimums are the exclusive one",
			`{"type": "number", "minimum": 1, "exclusiveMinimum": 1}`,
			`{"type": "number", "minimum": 1, "exclusiveMinimum": true}`},
		{"an inclusive maximum below the exclusive one stays alone",
			`{"type": "integer", "maximum": 10, "exclusiveMaximum": 100}`,
			`{"type": "integer", "maximum": 10}`},
		{"an exclusive maximum below the inclusive one replaces it",
			`{"type": "integer", "maximum": 1e3, "exclusiveMaximum": 10}`,
			`{"type": "integer", "maximum": 10, "exclusiveMaximum": true}`},
		{"examples gives its first as example",
			`{"type": "string", "examples": ["a", "b"], "$comment": "gone"}`,
			`{"type": "string", "example": "a"}`},
		{"an example of its own stays beside examples",
			`{"type": "string", "example": "mine", "examples": ["a", "b"]}`,
			`{"type": "string", "example": "mine"}`},
		{"an inline branch beside additionalProperties goes into an allOf",
			`{"additionalProperties": false, "oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "null"}]}`,
			`{"additionalProperties": false, "nullable": true, "allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}]}`},
		{"an inline branch beside required goes into an allOf",
			`{"required": ["a"], "anyOf": [{"type": "null"}, {"type": "object", "properties": {"a": {"type": "string"}}}]}`,
			`{"required": ["a"], "nullable": true, "allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}]}`},
		{"a branch's additionalProperties beside properties goes into an allOf",
			`{"properties": {"a": {"type": "string"}}, "oneOf": [{"type": "object", "additionalProperties": false}, {"type": "null"}]}`,
			`{"properties": {"a": {"type": "string"}}, "nullable": true, "allOf": [{"type": "object", "additionalProperties": false}]}`},
		{"base64 content is format byte, other content format binary",
			`{"type": "object", "properties": {"b": {"type": "string", "contentEncoding": "base64", "contentMediaType": "image/png"}, "r": {"type": "string", "contentMediaType": "application/octet-stream"}}}`,
			`{"type": "object", "properties": {"b": {"type": "string", "format": "byte"}, "r": {"type": "string", "format": "binary"}}}`},
		{"a boolean schema is an object",
			`{"type": "object", "properties": {"any": true, "none": false}}`,
			`{"type": "object", "properties": {"any": {}, "none": {"not": {}}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := convertSchema30(t, c.in)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(roundTrip(t, got), want) {
				g, _ := json.Marshal(got)
				t.Fatalf("converted %s\n got %s\nwant %s", c.in, g, c.want)
			}
		})
	}
}

// TestConvert30Refuses shows that a form with no 3.0 equivalent is an
// error naming where it is, not a silently different document.
func TestConvert30Refuses(t *testing.T) {
	cases := []struct{ name, in, error string }{
		{"two non-null types", `{"type": ["string", "integer"]}`, "one type"},
		{"only null", `{"type": "null"}`, "no null type"},
		{"prefixItems", `{"type": "array", "prefixItems": [{"type": "string"}]}`, `"prefixItems"`},
		{"$defs", `{"$defs": {"x": {"type": "string"}}}`, `"$defs"`},
		{"deep inside", `{"type": "object", "properties": {"p": {"items": {"if": {}}}}}`, `#/components/schemas/S/properties/p/items: keyword "if"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := convertSchema30(t, c.in)
			if err == nil || !strings.Contains(err.Error(), c.error) {
				t.Fatalf("converting %s: error %v, want one saying %q", c.in, err, c.error)
			}
		})
	}
	if _, err := convert30([]byte(`{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "webhooks": {"w": {}}}`)); err == nil || !strings.Contains(err.Error(), "webhooks") {
		t.Fatalf("converting a document with webhooks: error %v", err)
	}
}

// TestConvert30Document converts the outer parts: the version, the
// dialect, info.summary, and the descriptions beside Reference Objects.
func TestConvert30Document(t *testing.T) {
	src := `{"openapi": "3.1.0", "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": {"title": "t", "version": "1", "summary": "Short.", "description": "Long.", "license": {"name": "MIT", "identifier": "MIT"}},
		"paths": {"/x/{id}": {"get": {
			"parameters": [{"$ref": "#/components/parameters/id", "description": "override"}],
			"responses": {"200": {"$ref": "#/components/responses/R", "summary": "s"}}}}},
		"components": {
			"parameters": {"id": {"name": "id", "in": "path", "required": true, "schema": {"type": ["integer", "null"]}}},
			"responses": {"R": {"description": "r", "headers": {"H": {"schema": {"const": 1}}},
				"content": {"application/json": {"schema": {"type": ["string", "null"]}}}}}}}`
	out, err := convert30([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"openapi": "3.0.3",
		"info": {"title": "t", "version": "1", "description": "Short.\n\nLong.", "license": {"name": "MIT"}},
		"paths": {"/x/{id}": {"get": {
			"parameters": [{"$ref": "#/components/parameters/id"}],
			"responses": {"200": {"$ref": "#/components/responses/R"}}}}},
		"components": {
			"parameters": {"id": {"name": "id", "in": "path", "required": true, "schema": {"type": "integer", "nullable": true}}},
			"responses": {"R": {"description": "r", "headers": {"H": {"schema": {"enum": [1]}}},
				"content": {"application/json": {"schema": {"type": "string", "nullable": true}}}}}}}`
	var got, w any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("got %s", out)
	}
}

// TestDocument30 checks the served 3.0 form of the real document: it
// converts and holds no 3.1 form.
func TestDocument30(t *testing.T) {
	doc := Document30()
	var tree map[string]any
	if err := json.Unmarshal(doc, &tree); err != nil {
		t.Fatal(err)
	}
	if tree["openapi"] != "3.0.3" || tree["jsonSchemaDialect"] != nil {
		t.Fatalf("openapi %v, jsonSchemaDialect %v", tree["openapi"], tree["jsonSchemaDialect"])
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if _, isList := v["type"].([]any); isList {
				t.Errorf("%s: a type list", at)
			}
			if v["type"] == "null" {
				t.Errorf("%s: type null", at)
			}
			// (A properties map may name a property const.)
			if _, ok := v["const"]; ok && !strings.HasSuffix(at, "/properties") {
				t.Errorf("%s: const", at)
			}
			if _, ok := v["$ref"]; ok && len(v) > 1 {
				t.Errorf("%s: keywords beside a $ref", at)
			}
			for k, x := range v {
				walk(x, at+"/"+k)
			}
		case []any:
			for i, x := range v {
				walk(x, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(tree, "#")
	// Every operation of the source is in the 3.0 form.
	if n, m := len(asMap(tree["paths"])), len(asMap(treeOf(t, document)["paths"])); n != m {
		t.Fatalf("the 3.0 form has %d paths, openapi.json %d", n, m)
	}
}

// TestDocument30NullableRef shows that a nullable $ref's 3.0 form,
// {nullable: true, allOf: [{$ref}]} with no type (see convert30), lets
// null through in kin-openapi, and still checks a value that is not null
// against the referenced schema.
func TestDocument30NullableRef(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(Document30())
	if err != nil {
		t.Fatal(err)
	}
	rental := doc.Components.Schemas["Rental"]
	if rental == nil || rental.Value.Properties["ssh"] == nil {
		t.Fatal("the 3.0 form has no Rental.ssh")
	}
	ssh := rental.Value.Properties["ssh"].Value
	if !ssh.Nullable || len(ssh.AllOf) != 1 || ssh.AllOf[0].Ref == "" {
		t.Fatalf("Rental.ssh = nullable %v, allOf %v: want a nullable allOf of a $ref", ssh.Nullable, ssh.AllOf)
	}
	if err := ssh.VisitJSON(nil); err != nil {
		t.Errorf("null as Rental.ssh: %v", err)
	}
	if err := ssh.VisitJSON("not an object"); err == nil {
		t.Error("a string as Rental.ssh passed")
	}
}

func treeOf(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// roundTrip gives v as encoding/json decodes it (float64 numbers).
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
