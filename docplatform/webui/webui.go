// Package webui is the document platform's single-page web UI, built from
// ui/src/platform (TypeScript and Preact; see ui/ and internal/uibuild)
// and embedded here, so the binary serves it with no Node at run time.
//
// The build in dist/ is committed. After changing anything under ui/, run
// `go generate ./docplatform/webui` (it needs `npm ci` in ui/ once); CI
// rebuilds and fails when the committed build differs from the sources.
//
// The platform mounts Handler for GET requests outside /api/ (see
// httpapi.Options.Frontend): index.html for every client-side route,
// content-hashed bundles under /assets/.
package webui

import (
	"embed"
	"io/fs"

	"github.com/govkit/govkit/internal/spa"
)

//go:generate go run ../../internal/uibuild -ui ../../ui -app platform -out dist

//go:embed dist
var dist embed.FS

// Handler returns the handler serving the built UI.
func Handler() *spa.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	h, err := spa.New(sub)
	if err != nil {
		// Only a broken commit of dist/ gets here; the package's test
		// catches it first.
		panic("webui: the embedded build is incomplete: " + err.Error())
	}
	return h
}
