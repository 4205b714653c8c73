// Package openapi holds the OpenAPI 3.1 document of /api/v1, written by
// hand and embedded, and reads it: the operations for the /api/docs page
// and a validator that checks answers against it (the test suite runs
// every API answer through it, so the document cannot drift), and
// derives its OpenAPI 3.0 form (Document30) for client generators.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

//go:embed openapi.json
var document []byte

// JSON returns the document as served at /api/v1/openapi.json.
func JSON() []byte { return document }

// tree is the document decoded once, as generic JSON.
var tree = func() map[string]any {
	var m map[string]any
	if err := json.Unmarshal(document, &m); err != nil {
		panic("openapi: openapi.json: " + err.Error())
	}
	return m
}()

// Methods lists the HTTP methods an OpenAPI path item may hold, in the
// order the docs page shows them.
var Methods = []string{"get", "post", "put", "patch", "delete"}

// Info is the document's title, version and description.
type Info struct {
	Title, Version, Description string
}

// Operation is one method on one path, flattened for reading: every $ref
// is resolved and every schema is a list of fields.
type Operation struct {
	// Method is upper case (GET); Path is the template (/api/v1/offers/{id}).
	Method, Path string
	ID, Summary  string
	Description  string
	Tag          string
	// Public is true when no credentials are needed.
	Public     bool
	Params     []Param
	Request    []Field // nil without a request body
	Responses  []Response
	Idempotent bool // honours Idempotency-Key
}

// Anchor is the operation's id on the docs page.
func (o Operation) Anchor() string { return "op-" + o.ID }

// Param is one query, path or header parameter.
type Param struct {
	Name, In, Type, Description string
	Required                    bool
}

// Response is one documented status of an operation.
type Response struct {
	Status      string
	Description string
	// Schema names the component schema of the body ("Error", "Offer"),
	// empty for an inline one.
	Schema string
	Fields []Field
	// JSON: the body is JSON (not none, as a 204's, nor text or bytes).
	JSON bool
}

// Field is one property of a schema, nested properties named with dots
// (gpu.slug) and array items with [] (offers[].id).
type Field struct {
	Name, Type, Description string
	Required                bool
	Depth                   int
}

// DocInfo returns the document's info object.
func DocInfo() Info {
	info, _ := tree["info"].(map[string]any)
	return Info{Title: str(info, "title"), Version: str(info, "version"), Description: str(info, "description")}
}

// Operations returns every operation of the document, by path then method.
func Operations() []Operation {
	paths, _ := tree["paths"].(map[string]any)
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	var out []Operation
	for _, p := range keys {
		item, _ := paths[p].(map[string]any)
		for _, m := range Methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			out = append(out, operation(p, m, op))
		}
	}
	return out
}

func operation(path, method string, op map[string]any) Operation {
	o := Operation{Method: strings.ToUpper(method), Path: path, ID: str(op, "operationId"), Summary: str(op, "summary"), Description: str(op, "description")}
	if tags, _ := op["tags"].([]any); len(tags) > 0 {
		o.Tag, _ = tags[0].(string)
	}
	// An operation is public when {} (no credentials) is among its
	// security requirements; without its own list the document's applies.
	if sec, ok := op["security"].([]any); ok {
		for _, s := range sec {
			if m, _ := s.(map[string]any); len(m) == 0 {
				o.Public = true
			}
		}
	}
	params, _ := op["parameters"].([]any)
	for _, raw := range params {
		p := resolve(raw)
		if str(p, "name") == "Idempotency-Key" {
			o.Idempotent = true
		}
		req, _ := p["required"].(bool)
		o.Params = append(o.Params, Param{Name: str(p, "name"), In: str(p, "in"), Type: typeOf(resolve(p["schema"])), Description: str(p, "description"), Required: req})
	}
	if rb := resolve(op["requestBody"]); rb != nil {
		o.Request = fields(jsonSchema(rb), "", 0, nil)
	}
	responses, _ := op["responses"].(map[string]any)
	codes := make([]string, 0, len(responses))
	for code := range responses {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		r := resolve(responses[code])
		sch := jsonSchema(r)
		o.Responses = append(o.Responses, Response{Status: code, Description: str(r, "description"), Schema: refName(sch), Fields: fields(sch, "", 0, nil), JSON: sch != nil})
	}
	return o
}

// jsonSchema is the application/json schema of a request body or response.
func jsonSchema(r map[string]any) any {
	content, _ := r["content"].(map[string]any)
	mt, _ := content["application/json"].(map[string]any)
	return mt["schema"]
}

// resolve follows a local $ref ("#/components/…") to what it names.
func resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	for i := 0; i < 8 && m != nil; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		m = lookup(ref)
	}
	return m
}

// lookup returns the object a local JSON pointer names, nil if none.
func lookup(ref string) map[string]any {
	ptr, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = tree
	for _, part := range strings.Split(ptr, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, _ := cur.(map[string]any)
		cur = m[part]
	}
	m, _ := cur.(map[string]any)
	return m
}

// refName is the component name of a schema given as a $ref.
func refName(v any) string {
	m, _ := v.(map[string]any)
	ref, _ := m["$ref"].(string)
	return strings.TrimPrefix(ref, "#/components/schemas/")
}

// fields flattens a schema's properties, recursing into objects and
// arrays of objects; seen stops a schema that contains itself.
func fields(v any, prefix string, depth int, seen []string) []Field {
	name := refName(v)
	if name != "" {
		for _, s := range seen {
			if s == name {
				return nil
			}
		}
		seen = append(seen, name)
	}
	sch := nonNull(resolve(v))
	if sch == nil {
		return nil
	}
	if str(sch, "type") == "array" || (prefix == "" && sch["items"] != nil) {
		return fields(sch["items"], prefix+"[]", depth, seen)
	}
	props, _ := sch["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	// Properties in the order the document lists required ones, then the rest.
	req := map[string]bool{}
	var order []string
	if rs, _ := sch["required"].([]any); rs != nil {
		for _, r := range rs {
			s, _ := r.(string)
			req[s] = true
			if props[s] != nil {
				order = append(order, s)
			}
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !req[k] {
			order = append(order, k)
		}
	}
	var out []Field
	for _, k := range order {
		p := props[k]
		ps := resolve(p)
		desc := str(ps, "description")
		if d := str(asMap(p), "description"); d != "" {
			desc = d
		}
		full := k
		if prefix != "" {
			full = prefix + "." + k
		}
		out = append(out, Field{Name: full, Type: typeOf(p), Description: desc, Required: req[k], Depth: depth})
		if depth < 3 {
			out = append(out, fields(p, full, depth+1, seen)...)
		}
	}
	return out
}

// nonNull picks the schema out of a "X or null" oneOf.
func nonNull(m map[string]any) map[string]any {
	if alts, ok := m["oneOf"].([]any); ok {
		for _, a := range alts {
			if am := resolve(a); str(am, "type") != "null" {
				return am
			}
		}
	}
	return m
}

// typeOf describes a schema's type for a reader: "integer", "string|null",
// "Offer", "array of Rental".
func typeOf(v any) string {
	if name := refName(v); name != "" {
		return name
	}
	m := asMap(v)
	if alts, ok := m["oneOf"].([]any); ok {
		var parts []string
		for _, a := range alts {
			parts = append(parts, typeOf(a))
		}
		return strings.Join(parts, "|")
	}
	var t string
	switch tt := m["type"].(type) {
	case string:
		t = tt
	case []any:
		var parts []string
		for _, p := range tt {
			s, _ := p.(string)
			parts = append(parts, s)
		}
		t = strings.Join(parts, "|")
	}
	if strings.HasPrefix(t, "array") {
		return strings.Replace(t, "array", "array of "+typeOf(m["items"]), 1)
	}
	if f := str(m, "format"); f != "" {
		t += " (" + f + ")"
	}
	if e, ok := m["enum"].([]any); ok {
		var vals []string
		for _, x := range e {
			vals = append(vals, fmt.Sprint(x))
		}
		t += ": " + strings.Join(vals, ", ")
	}
	if t == "" {
		t = "any"
	}
	return t
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}
