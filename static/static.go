// Package static embeds the stylesheet, scripts and images and serves them
// under content-hashed URLs, so browsers may cache them forever.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed *.css *.js *.svg
var files embed.FS

// Prefix is the URL path under which assets are served.
const Prefix = "/static/"

type asset struct {
	name, hashed, etag, ctype string
	body                      []byte
}

var byName, byHashed = load()

func load() (map[string]*asset, map[string]*asset) {
	byName, byHashed := map[string]*asset{}, map[string]*asset{}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])[:12]
		ext := path.Ext(e.Name())
		a := &asset{
			name:   e.Name(),
			hashed: strings.TrimSuffix(e.Name(), ext) + "." + h + ext,
			etag:   `"` + h + `"`,
			ctype:  mime.TypeByExtension(ext),
			body:   b,
		}
		byName[a.name], byHashed[a.hashed] = a, a
	}
	return byName, byHashed
}

// URL returns the content-hashed URL of the named asset. It panics on an
// unknown name so a typo fails the first test that renders the page.
func URL(name string) string {
	a, ok := byName[name]
	if !ok {
		panic("static: no asset " + name)
	}
	return Prefix + a.hashed
}

// ServeHTTP serves a hashed asset with a year-long immutable cache header;
// any other name is a 404 (an old hash must not be served new content).
func ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, ok := byHashed[strings.TrimPrefix(r.URL.Path, Prefix)]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", a.etag)
	if a.ctype != "" {
		h.Set("Content-Type", a.ctype)
	}
	if r.Header.Get("If-None-Match") == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(a.body)
}
