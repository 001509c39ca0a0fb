// Package web holds the web panel: a React application in this folder,
// built by `make ui` into dist/, which this package embeds so that the
// server binary carries it. Without a build dist/ holds only a marker
// file, the binary still builds, and the server shows a page that says
// how to build the panel.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist returns the built panel: index.html and its assets, or no
// index.html when the panel was not built.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid path: fs.Sub cannot fail on it
	}
	return sub
}
