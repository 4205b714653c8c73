package openapi

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// docURL is where the document is registered with the schema compiler.
const docURL = "https://suanli.invalid/api/v1/openapi.json"

// Validator checks requests and answers against the document. It is
// safe for concurrent use.
type Validator struct {
	c     *jsonschema.Compiler
	mu    sync.Mutex
	cache map[string]*jsonschema.Schema
	ops   []route
}

// route is one operation with its path split into segments for matching.
type route struct {
	method string
	path   string
	segs   []string // "{id}" segments match any one segment
	op     map[string]any
}

// NewValidator compiles the document's schemas (JSON Schema 2020-12, the
// dialect of OpenAPI 3.1).
func NewValidator() (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(document))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(docURL, doc); err != nil {
		return nil, err
	}
	v := &Validator{c: c, cache: map[string]*jsonschema.Schema{}}
	paths, _ := tree["paths"].(map[string]any)
	for p, item := range paths {
		for _, m := range Methods {
			if op, ok := asMap(item)[m].(map[string]any); ok {
				v.ops = append(v.ops, route{method: strings.ToUpper(m), path: p, segs: strings.Split(p, "/"), op: op})
			}
		}
	}
	// Compile every schema now: a broken document fails here, not in the
	// middle of some test.
	for _, r := range v.ops {
		if rb := resolvePtr(r.op["requestBody"], pointer("paths", r.path, strings.ToLower(r.method), "requestBody")); rb != "" && jsonBody(rb) {
			if _, err := v.schema(rb + "/content/application~1json/schema"); err != nil {
				return nil, err
			}
		}
		responses, _ := r.op["responses"].(map[string]any)
		for code, resp := range responses {
			ptr := resolvePtr(resp, pointer("paths", r.path, strings.ToLower(r.method), "responses", code))
			if _, ok := asMap(lookup(ptr)["content"])["application/json"]; !ok {
				continue
			}
			if _, err := v.schema(ptr + "/content/application~1json/schema"); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// Find returns the template of the documented path that matches a
// request path, and whether the method is documented on it. A literal
// segment wins over a {param} one.
func (v *Validator) Find(method, path string) (template string, ok bool) {
	r := v.match(method, path)
	if r == nil {
		return "", false
	}
	return r.path, r.method == method
}

func (v *Validator) match(method, path string) *route {
	segs := strings.Split(strings.TrimSuffix(path, "/"), "/")
	var best *route
	bestLiterals, bestMethod := -1, false
	for i := range v.ops {
		r := &v.ops[i]
		if len(r.segs) != len(segs) {
			continue
		}
		literals, ok := 0, true
		for j, s := range r.segs {
			if strings.HasPrefix(s, "{") {
				if segs[j] == "" {
					ok = false
					break
				}
				continue
			}
			if s != segs[j] {
				ok = false
				break
			}
			literals++
		}
		if !ok {
			continue
		}
		sameMethod := r.method == method
		if literals > bestLiterals || (literals == bestLiterals && sameMethod && !bestMethod) {
			best, bestLiterals, bestMethod = r, literals, sameMethod
		}
	}
	return best
}

// CheckRequest validates a request body against the operation's request
// schema. Only call it for requests the server accepted (2xx): tests send
// bad bodies on purpose, and the answer to those is checked instead.
func (v *Validator) CheckRequest(method, path string, body []byte) error {
	r := v.match(method, path)
	if r == nil || r.method != method {
		return fmt.Errorf("%s %s is not in the document", method, path)
	}
	rb := resolvePtr(r.op["requestBody"], pointer("paths", r.path, strings.ToLower(method), "requestBody"))
	if rb == "" || !jsonBody(rb) {
		return nil // none, or not JSON (a multipart upload)
	}
	return v.validate(rb+"/content/application~1json/schema", body)
}

// CheckResponse validates an answer: its operation is documented (an
// undocumented path must answer 404 or 405, as the router does), its
// status is documented for it, and a JSON body matches the schema.
func (v *Validator) CheckResponse(method, path string, status int, header http.Header, body []byte) error {
	r := v.match(method, path)
	if r == nil || r.method != method {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("%s %s answered %d but is not in the document", method, path, status)
	}
	code := strconv.Itoa(status)
	responses, _ := r.op["responses"].(map[string]any)
	resp, ok := responses[code]
	if !ok {
		return fmt.Errorf("%s %s (%s %s): status %d is not documented; body %s", method, path, r.method, r.path, status, clip(body))
	}
	ptr := resolvePtr(resp, pointer("paths", r.path, strings.ToLower(r.method), "responses", code))
	content, _ := lookup(ptr)["content"].(map[string]any)
	if len(content) == 0 {
		if len(body) > 0 {
			return fmt.Errorf("%s %s %d: body sent but none documented", method, path, status)
		}
		return nil
	}
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if _, ok := content[mt]; !ok {
		return fmt.Errorf("%s %s %d: content type %q is not documented", method, path, status, mt)
	}
	if mt != "application/json" {
		return nil
	}
	if err := v.validate(ptr+"/content/application~1json/schema", body); err != nil {
		return fmt.Errorf("%s %s %d (%s %s): %w", method, path, status, r.method, r.path, err)
	}
	return nil
}

// jsonBody reports whether the request body at ptr may be JSON (an
// upload is multipart/form-data only).
func jsonBody(ptr string) bool {
	_, ok := asMap(lookup(ptr)["content"])["application/json"]
	return ok
}

func (v *Validator) validate(ptr string, body []byte) error {
	sch, err := v.schema(ptr)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %v: %s", err, clip(body))
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("body does not match the document:\n%v\nbody: %s", ve, clip(body))
		}
		return err
	}
	return nil
}

func (v *Validator) schema(ptr string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.cache[ptr]; ok {
		return s, nil
	}
	s, err := v.c.Compile(docURL + ptr)
	if err != nil {
		return nil, fmt.Errorf("openapi: compile %s: %w", ptr, err)
	}
	v.cache[ptr] = s
	return s, nil
}

// resolvePtr returns the JSON pointer ("#/…") of what v is: the target of
// its $ref, or at itself; "" when v is absent.
func resolvePtr(v any, at string) string {
	m := asMap(v)
	if m == nil {
		return ""
	}
	for i := 0; i < 8; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return at
		}
		at, m = ref, lookup(ref)
	}
	return at
}

// pointer builds a JSON pointer from unescaped parts.
func pointer(parts ...string) string {
	var b strings.Builder
	b.WriteString("#")
	for _, p := range parts {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}
