package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func serveUI(t *testing.T, h http.Handler, method, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestUIHandler(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{
		"index.html":         {Data: []byte(`<!doctype html><html><head><title>p</title></head><body></body></html>`)},
		"assets/app-1a2b.js": {Data: []byte(`console.log(1)`)},
		"favicon.svg":        {Data: []byte(`<svg/>`)},
	}
	h, err := newUIHandler(files, "/panel/")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, header string
		status             int
		cache, body        string
	}{
		{"root", "/panel/", "", 200, cacheOthers, `<base href="/panel/"><meta name="boomerang-api" content="/">`},
		{"deep link", "/panel/tasks/42", "", 200, cacheOthers, `<base href="/panel/">`},
		{"behind a proxy", "/panel/groups", "/ops/boomerang/", 200, cacheOthers, `<base href="/ops/boomerang/panel/"><meta name="boomerang-api" content="/ops/boomerang/">`},
		{"hostile prefix", "/panel/", `/"><script>`, 200, cacheOthers, `<base href="/panel/">`},
		{"asset", "/panel/assets/app-1a2b.js", "", 200, cacheAssets, "console.log(1)"},
		{"other file", "/panel/favicon.svg", "", 200, cacheOthers, "<svg/>"},
		{"missing asset", "/panel/assets/gone.js", "", 404, "", "404 page not found"},
	} {
		rec := serveUI(t, h, http.MethodGet, tc.path, map[string]string{"X-Forwarded-Prefix": tc.header})
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.status)
		}
		if tc.cache != "" && rec.Header().Get("Cache-Control") != tc.cache {
			t.Errorf("%s: Cache-Control %q, want %q", tc.name, rec.Header().Get("Cache-Control"), tc.cache)
		}
		if !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s: body %q lacks %q", tc.name, rec.Body.String(), tc.body)
		}
	}
	if rec := serveUI(t, h, http.MethodPost, "/panel/", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d", rec.Code)
	}
	if rec := serveUI(t, h, http.MethodGet, "/panel/", nil); !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("index.html without a content security policy: %v", rec.Header())
	}
}

func TestUIPlaceholderWithoutBuild(t *testing.T) {
	t.Parallel()
	h, err := newUIHandler(fstest.MapFS{".gitkeep": {}}, DefaultUIPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/ui/", "/ui/tasks"} {
		rec := serveUI(t, h, http.MethodGet, path, nil)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "make ui") {
			t.Errorf("%s: %d %q, want the placeholder", path, rec.Code, rec.Body.String())
		}
	}
}

func TestServerMountsThePanel(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.Panel.UIPath = "/console/" })
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get("http://" + ts.HTTPAddr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("/ answers %d to %q, want a redirect to the panel", resp.StatusCode, resp.Header.Get("Location"))
	}
	if code, body := get(t, "http://"+ts.HTTPAddr()+"/console/overview"); code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("/console/overview: %d %q", code, body)
	}
	off := startServer(t, func(c *Config) { c.Panel.NoUI = true })
	if code, _ := get(t, "http://"+off.HTTPAddr()+"/ui/"); code != http.StatusNotFound {
		t.Fatalf("with NoUI /ui/ answers %d", code)
	}
}
