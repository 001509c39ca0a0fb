package server

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"

	"github.com/boomerangd/boomerang/web"
)

// uiHandler serves the web panel under its path: the built files, and
// index.html for every other path below it, which are the panel's own
// routes (deep links). index.html gets a <base> naming the panel's path
// and a <meta> naming the API's, both behind the X-Forwarded-Prefix a
// reverse proxy may send, so the panel works under any prefix. Without a
// build it serves a page that says how to make one.
type uiHandler struct {
	files  fs.FS
	prefix string // Config.Panel.UIPath
	index  []byte // nil: the panel was not built
}

// Response headers of the panel's pages. The panel loads nothing from
// elsewhere; the component kit sets inline styles.
const (
	uiCSP       = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'self'"
	cacheAssets = "public, max-age=31536000, immutable" // names carry a content hash
	cacheOthers = "no-cache"                            // revalidate: a new build changes them
)

func newUIHandler(files fs.FS, prefix string) (*uiHandler, error) {
	index, err := fs.ReadFile(files, "index.html")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("server: reading the panel's index.html: %w", err)
	}
	return &uiHandler{files: files, prefix: prefix, index: index}, nil
}

func (h *uiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	outer := forwardedPrefix(r)
	if h.index == nil {
		h.page(w, placeholderPage)
		return
	}
	rel := strings.TrimPrefix(r.URL.Path, h.prefix)
	if rel != "" && rel != "index.html" {
		if st, err := fs.Stat(h.files, rel); err == nil && !st.IsDir() {
			cache := cacheOthers
			if strings.HasPrefix(rel, "assets/") {
				cache = cacheAssets
			}
			w.Header().Set("Cache-Control", cache)
			http.ServeFileFS(w, r, h.files, rel)
			return
		}
		if path.Ext(rel) != "" { // a file that is not there, not a route
			http.NotFound(w, r)
			return
		}
	}
	head := fmt.Sprintf(`<head><base href="%s"><meta name="boomerang-api" content="%s">`,
		html.EscapeString(outer+h.prefix), html.EscapeString(outer+"/"))
	h.page(w, bytes.Replace(h.index, []byte("<head>"), []byte(head), 1))
}

func (h *uiHandler) page(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", cacheOthers)
	w.Header().Set("Content-Security-Policy", uiCSP)
	_, _ = w.Write(body)
}

// safePrefix is what X-Forwarded-Prefix may hold: a plain path.
var safePrefix = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)+$`)

// forwardedPrefix is the path a reverse proxy serves this server under,
// without its trailing slash, or "".
func forwardedPrefix(r *http.Request) string {
	p := strings.TrimSuffix(r.Header.Get("X-Forwarded-Prefix"), "/")
	if safePrefix.MatchString(p) {
		return p
	}
	return ""
}

// newUI builds the panel's handler from the embedded build, or nil with
// Config.Panel.NoUI.
func (s *Server) newUI() (*uiHandler, error) {
	if s.cfg.Panel.NoUI {
		return nil, nil
	}
	return newUIHandler(web.Dist(), s.cfg.Panel.UIPath)
}

// uiPath is where the panel is served, "" when it is not.
func (s *Server) uiPath() string {
	if s.cfg.Panel.NoUI {
		return ""
	}
	return s.cfg.Panel.UIPath
}

var placeholderPage = []byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Boomerang panel not built</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto; line-height: 1.5">
<h1>The Boomerang panel is not built into this binary</h1>
<p>This server was built without the web panel. Build it, then the server:</p>
<pre>make ui      # needs Node.js 20 and npm: installs web/'s packages, builds web/dist
go build ./cmd/boomerang</pre>
<p>The API, <code>/metrics</code> and <code>boomtool</code> work without it. See docs/panel.md.</p>
</body></html>
`)
