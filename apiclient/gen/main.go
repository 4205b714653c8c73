// Command gen writes apiclient/client.gen.go from the API's OpenAPI
// document (openapi.Document30). Run it with `go generate ./apiclient`
// after every change to openapi/openapi.json.
package main

import (
	"flag"
	"log/slog"
	"os"

	"suanli/apiclient/internal/generate"
)

func main() {
	// go generate runs in the package's directory (apiclient/).
	out := flag.String("o", "client.gen.go", "the file to write")
	flag.Parse()
	code, err := generate.Client()
	if err != nil {
		slog.Error("generate the API client", "err", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, code, 0o644); err != nil {
		slog.Error("write the API client", "err", err)
		os.Exit(1)
	}
}
