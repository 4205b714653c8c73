package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
)

// Document30 returns the document in OpenAPI 3.0.3 form, as served at
// /api/v1/openapi-3.0.json. openapi.json stays the one source: this form
// is derived from it, for tools that read only OpenAPI 3.0 (the client
// generator of package apiclient among them). The bytes are computed once
// and are the same on every call and every build of the same document
// (keys sorted, two-space indent).
//
// It panics when the document uses a form that has no 3.0 equivalent;
// TestDocument30 fails on such a document first.
func Document30() []byte {
	b, err := document30()
	if err != nil {
		panic("openapi: no OpenAPI 3.0 form of openapi.json: " + err.Error())
	}
	return b
}

var document30 = sync.OnceValues(func() ([]byte, error) { return convert30(document) })

// convert30 rewrites an OpenAPI 3.1 document as OpenAPI 3.0.3:
//
//   - type: [T, "null"] becomes type: T, nullable: true;
//   - const: v becomes enum: [v];
//   - a oneOf or anyOf with a {type: "null"} branch loses the branch and
//     becomes nullable; a single branch left is lifted into the schema
//     (allOf: [branch] for a $ref, merged in for an inline schema where
//     that keeps its meaning: lift);
//   - a schema $ref with keywords beside it, which 3.0 ignores, becomes
//     allOf: [{$ref}] with those keywords beside the allOf;
//   - a Reference Object (parameter, response, …) loses the summary and
//     description 3.1 lets it override;
//   - numeric exclusiveMinimum/exclusiveMaximum become minimum/maximum
//     with the boolean form (beside an inclusive bound, the stricter of
//     the two stays); examples: [v, …] becomes example: v unless the
//     schema has an example;
//     contentEncoding base64 becomes format byte, contentMediaType alone
//     format binary; $comment, $id, $schema and $anchor are dropped; a
//     boolean schema becomes {} or {not: {}};
//   - jsonSchemaDialect goes, info.summary joins info.description and
//     license.identifier goes.
//
// Anything else 3.0 cannot say (webhooks, a type list of two non-null
// types, prefixItems, $defs, …) is an error naming where it is, rather
// than a silently different document.
//
// A nullable $ref (in 3.1 a oneOf of the $ref and null) becomes
// {nullable: true, allOf: [{$ref}]}, with no type beside nullable. 3.0.3
// says nullable only adds null to an explicitly defined type, so a
// strict reader ignores it there and refuses null; the form relies on
// readers that honour nullable on its own, as kin-openapi (the
// validator; TestDocument30NullableRef) and oapi-codegen (which makes
// the field a pointer) do. 3.0 has no stricter way to say it: a type
// beside the allOf would have to repeat the referenced one's.
func convert30(src []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber() // numbers are written back as they were
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	c := &conv30{}
	c.document(doc)
	if len(c.errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(c.errs, "; "))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// conv30 walks a document, rewriting it in place, and collects what it
// cannot convert.
type conv30 struct{ errs []string }

func (c *conv30) fail(at, format string, args ...any) {
	c.errs = append(c.errs, at+": "+fmt.Sprintf(format, args...))
}

// operationKeys are the methods of a 3.0 Path Item.
var operationKeys = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func (c *conv30) document(doc map[string]any) {
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		c.fail("#/openapi", "want a 3.1 document, have %q", v)
	}
	doc["openapi"] = "3.0.3"
	delete(doc, "jsonSchemaDialect")
	if hooks := asMap(doc["webhooks"]); len(hooks) > 0 {
		c.fail("#/webhooks", "OpenAPI 3.0 has no webhooks")
	}
	delete(doc, "webhooks")
	if info := asMap(doc["info"]); info != nil {
		if sum, _ := info["summary"].(string); sum != "" {
			desc, _ := info["description"].(string)
			info["description"] = strings.TrimSpace(sum + "\n\n" + desc)
		}
		delete(info, "summary")
		if lic := asMap(info["license"]); lic != nil {
			delete(lic, "identifier")
		}
	}
	if doc["paths"] == nil {
		doc["paths"] = map[string]any{} // required in 3.0
	}
	for _, p := range sortedKeys(asMap(doc["paths"])) {
		c.pathItem(asMap(asMap(doc["paths"])[p]), pointer("paths", p))
	}
	comp := asMap(doc["components"])
	if comp == nil {
		return
	}
	if len(asMap(comp["pathItems"])) > 0 {
		c.fail("#/components/pathItems", "OpenAPI 3.0 has no components.pathItems")
	}
	schemas := asMap(comp["schemas"])
	for _, k := range sortedKeys(schemas) {
		schemas[k] = c.schema(schemas[k], pointer("components", "schemas", k))
	}
	for _, k := range sortedKeys(asMap(comp["parameters"])) {
		c.parameter(asMap(comp["parameters"])[k], pointer("components", "parameters", k))
	}
	for _, k := range sortedKeys(asMap(comp["responses"])) {
		c.response(asMap(comp["responses"])[k], pointer("components", "responses", k))
	}
	for _, k := range sortedKeys(asMap(comp["requestBodies"])) {
		c.requestBody(asMap(comp["requestBodies"])[k], pointer("components", "requestBodies", k))
	}
	for _, k := range sortedKeys(asMap(comp["headers"])) {
		c.parameter(asMap(comp["headers"])[k], pointer("components", "headers", k))
	}
	for _, k := range sortedKeys(asMap(comp["securitySchemes"])) {
		if t, _ := asMap(asMap(comp["securitySchemes"])[k])["type"].(string); t == "mutualTLS" {
			c.fail(pointer("components", "securitySchemes", k), "OpenAPI 3.0 has no mutualTLS security scheme")
		}
	}
}

func (c *conv30) pathItem(item map[string]any, at string) {
	c.parameters(item, at)
	for _, m := range operationKeys {
		op := asMap(item[m])
		if op == nil {
			continue
		}
		opAt := at + "/" + m
		c.parameters(op, opAt)
		if op["requestBody"] != nil {
			c.requestBody(op["requestBody"], opAt+"/requestBody")
		}
		responses := asMap(op["responses"])
		for _, code := range sortedKeys(responses) {
			c.response(responses[code], opAt+"/responses/"+code)
		}
		if len(asMap(op["callbacks"])) > 0 {
			c.fail(opAt+"/callbacks", "callbacks are not converted")
		}
	}
}

func (c *conv30) parameters(holder map[string]any, at string) {
	params, _ := holder["parameters"].([]any)
	for i, p := range params {
		c.parameter(p, fmt.Sprintf("%s/parameters/%d", at, i))
	}
}

// parameter converts a Parameter or Header Object (same shape).
func (c *conv30) parameter(v any, at string) {
	p := asMap(v)
	if c.reference(p) {
		return
	}
	if p["schema"] != nil {
		p["schema"] = c.schema(p["schema"], at+"/schema")
	}
	c.content(p, at)
}

func (c *conv30) requestBody(v any, at string) {
	rb := asMap(v)
	if c.reference(rb) {
		return
	}
	c.content(rb, at)
}

func (c *conv30) response(v any, at string) {
	r := asMap(v)
	if c.reference(r) {
		return
	}
	c.content(r, at)
	headers := asMap(r["headers"])
	for _, h := range sortedKeys(headers) {
		c.parameter(headers[h], at+"/headers/"+pointer(h)[2:])
	}
}

// content converts the schemas of a content map's media types.
func (c *conv30) content(holder map[string]any, at string) {
	content := asMap(holder["content"])
	for _, mt := range sortedKeys(content) {
		m := asMap(content[mt])
		mAt := at + "/content/" + pointer(mt)[2:]
		if m["schema"] != nil {
			m["schema"] = c.schema(m["schema"], mAt+"/schema")
		}
		enc := asMap(m["encoding"])
		for _, prop := range sortedKeys(enc) {
			headers := asMap(asMap(enc[prop])["headers"])
			for _, h := range sortedKeys(headers) {
				c.parameter(headers[h], mAt+"/encoding/"+prop+"/headers/"+h)
			}
		}
	}
}

// reference reports whether o is a Reference Object, and strips the
// summary and description 3.1 allows beside its $ref (3.0 allows none).
func (c *conv30) reference(o map[string]any) bool {
	if _, ok := o["$ref"]; !ok {
		return false
	}
	delete(o, "summary")
	delete(o, "description")
	return true
}

// schemaKeys30 are the keywords of a 3.0 Schema Object.
var schemaKeys30 = map[string]bool{
	"$ref": true, "title": true, "multipleOf": true, "maximum": true, "exclusiveMaximum": true,
	"minimum": true, "exclusiveMinimum": true, "maxLength": true, "minLength": true,
	"pattern": true, "maxItems": true, "minItems": true, "uniqueItems": true,
	"maxProperties": true, "minProperties": true, "required": true, "enum": true, "type": true,
	"allOf": true, "oneOf": true, "anyOf": true, "not": true, "items": true, "properties": true,
	"additionalProperties": true, "description": true, "format": true, "default": true,
	"nullable": true, "discriminator": true, "readOnly": true, "writeOnly": true, "xml": true,
	"externalDocs": true, "example": true, "deprecated": true,
}

// schema converts one schema and those inside it, and returns it: a
// schema whose $ref has keywords beside it comes back as a new object.
func (c *conv30) schema(v any, at string) any {
	if b, ok := v.(bool); ok { // 3.1 schemas may be true (anything) or false (nothing)
		if b {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	}
	s, ok := v.(map[string]any)
	if !ok {
		c.fail(at, "a schema must be an object or a boolean")
		return v
	}
	nullable := false

	// A oneOf/anyOf branch that is only null is 3.0's nullable.
	for _, kw := range []string{"oneOf", "anyOf"} {
		branches, ok := s[kw].([]any)
		if !ok {
			continue
		}
		var kept []any
		for _, br := range branches {
			if isNullSchema(br) {
				nullable = true
				continue
			}
			kept = append(kept, br)
		}
		switch {
		case len(kept) == 0:
			c.fail(at+"/"+kw, "only null branches: OpenAPI 3.0 has no null type")
			delete(s, kw)
		case len(kept) == 1 && len(kept) < len(branches):
			delete(s, kw)
			lift(s, kept[0])
		default:
			s[kw] = kept
		}
	}

	// The schemas inside.
	props := asMap(s["properties"])
	for _, k := range sortedKeys(props) {
		props[k] = c.schema(props[k], at+"/properties/"+pointer(k)[2:])
	}
	if s["items"] != nil {
		if _, isList := s["items"].([]any); isList {
			c.fail(at+"/items", "a list of items schemas has no 3.0 form")
		} else {
			s["items"] = c.schema(s["items"], at+"/items")
		}
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		s["additionalProperties"] = c.schema(ap, at+"/additionalProperties")
	}
	for _, kw := range []string{"allOf", "oneOf", "anyOf"} {
		list, _ := s[kw].([]any)
		for i := range list {
			list[i] = c.schema(list[i], fmt.Sprintf("%s/%s/%d", at, kw, i))
		}
	}
	if s["not"] != nil {
		s["not"] = c.schema(s["not"], at+"/not")
	}

	// The keywords.
	switch t := s["type"].(type) {
	case []any:
		var types []any
		for _, x := range t {
			if x == "null" {
				nullable = true
			} else {
				types = append(types, x)
			}
		}
		switch len(types) {
		case 1:
			s["type"] = types[0]
		case 0:
			c.fail(at+"/type", "OpenAPI 3.0 has no null type")
			delete(s, "type")
		default:
			c.fail(at+"/type", "OpenAPI 3.0 allows one type, not %v", types)
		}
	case string:
		if t == "null" {
			c.fail(at+"/type", "OpenAPI 3.0 has no null type")
		}
	}
	if cv, ok := s["const"]; ok {
		if _, has := s["enum"]; has {
			c.fail(at, "const beside enum")
		}
		s["enum"] = []any{cv}
		delete(s, "const")
	}
	if ex, ok := s["examples"].([]any); ok {
		// An example of its own stays: it was written for 3.0 readers.
		if _, has := s["example"]; !has && len(ex) > 0 {
			s["example"] = ex[0]
		}
		delete(s, "examples")
	}
	c.exclusiveBound(s, "minimum", "exclusiveMinimum", -1, at)
	c.exclusiveBound(s, "maximum", "exclusiveMaximum", 1, at)
	// A string's content: base64 is 3.0's format byte, raw bytes its
	// format binary.
	if enc, ok := s["contentEncoding"].(string); ok {
		if enc != "base64" {
			c.fail(at+"/contentEncoding", "only base64 has an OpenAPI 3.0 form (format: byte), not %q", enc)
		}
		s["format"] = "byte"
		delete(s, "contentEncoding")
		delete(s, "contentMediaType")
	} else if _, ok := s["contentMediaType"]; ok {
		if s["format"] == nil {
			s["format"] = "binary"
		}
		delete(s, "contentMediaType")
	}
	for _, kw := range []string{"$comment", "$id", "$schema", "$anchor"} {
		delete(s, kw)
	}
	if nullable {
		s["nullable"] = true
	}
	for _, k := range sortedKeys(s) {
		if !schemaKeys30[k] && !strings.HasPrefix(k, "x-") {
			c.fail(at, "keyword %q has no OpenAPI 3.0 form", k)
		}
	}

	// 3.0 ignores everything beside a $ref: move the $ref into an allOf
	// so those keywords (nullable, description, …) still apply.
	if ref, ok := s["$ref"]; ok && len(s) > 1 {
		delete(s, "$ref")
		all, _ := s["allOf"].([]any)
		s["allOf"] = append([]any{map[string]any{"$ref": ref}}, all...)
	}
	return s
}

// exclusiveBound rewrites 3.1's numeric exclusive bound (exclusive, as
// exclusiveMinimum) as 3.0's bound (bound, as minimum) with the boolean
// form. A schema with both keeps the stricter: the exclusive one unless
// the inclusive bound lies beyond it (above it for a minimum, below for
// a maximum: sign is -1 for a minimum, 1 for a maximum), which then
// stays alone.
func (c *conv30) exclusiveBound(s map[string]any, bound, exclusive string, sign int, at string) {
	ex, ok := s[exclusive].(json.Number)
	if !ok {
		return
	}
	if b, has := s[bound]; has {
		bn, _ := b.(json.Number)
		x, okx := new(big.Rat).SetString(string(ex))
		y, oky := new(big.Rat).SetString(string(bn))
		if !okx || !oky {
			c.fail(at, "%s %v beside %s %v: not numbers", bound, b, exclusive, ex)
			return
		}
		if y.Cmp(x)*sign < 0 {
			delete(s, exclusive) // the inclusive bound is the stricter
			return
		}
	}
	s[bound] = ex
	s[exclusive] = true
}

// lift puts the one branch left of a oneOf/anyOf into the schema s: a
// $ref as allOf: [branch], an inline schema by merging its keywords into
// s, unless that changes what they mean, when it goes into an allOf too:
// s already has one of the branch's keywords, or additionalProperties or
// required (which would then apply to the branch's properties too, or
// the branch's additionalProperties to s's properties).
func lift(s map[string]any, branch any) {
	b := asMap(branch)
	merge := b != nil && b["$ref"] == nil
	for k := range b {
		if _, clash := s[k]; clash {
			merge = false
		}
	}
	for _, k := range []string{"additionalProperties", "required"} {
		if _, has := s[k]; has {
			merge = false
		}
	}
	if _, has := b["additionalProperties"]; has && s["properties"] != nil {
		merge = false
	}
	if !merge {
		all, _ := s["allOf"].([]any)
		s["allOf"] = append(all, branch)
		return
	}
	for k, v := range b {
		s[k] = v
	}
}

// isNullSchema reports whether a schema allows null and nothing else:
// {type: "null"}, {type: ["null"]}, {const: null} or {enum: [null]},
// with nothing beside but annotations.
func isNullSchema(v any) bool {
	s := asMap(v)
	if s == nil {
		return false
	}
	null := false
	for k, x := range s {
		switch k {
		case "type":
			list, _ := x.([]any)
			null = x == "null" || len(list) == 1 && list[0] == "null"
			if !null {
				return false
			}
		case "const":
			if x != nil {
				return false
			}
			null = true
		case "enum":
			list, _ := x.([]any)
			if len(list) != 1 || list[0] != nil {
				return false
			}
			null = true
		case "description", "title", "$comment":
		default:
			return false
		}
	}
	return null
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
