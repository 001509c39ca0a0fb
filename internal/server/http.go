package server

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxHeaderBytes bounds an HTTP request's headers.
const maxHeaderBytes = 64 << 10

// connectBodyLimit is the largest request body the Connect handler
// takes: a frame in the JSON mapping, whose base64 makes bytes fields a
// third larger, so the payload limit holds on every protocol.
func connectBodyLimit(maxFrame int) int { return maxFrame/3*4 + 4<<10 }

// newHTTPServer serves the Connect handler, /healthz and /readyz, and,
// unless Config.MetricsAddr moves them, /metrics and (with Config.Pprof)
// /debug/pprof/. Without TLS cleartext HTTP/2 (h2c, with prior knowledge)
// is on beside HTTP/1.1, so gRPC clients work; with TLS, HTTP/2 is
// negotiated.
func (s *Server) newHTTPServer(reg *prometheus.Registry) *http.Server {
	mux := http.NewServeMux()
	path, handler := newConnectHandler(s.svc, s.m, connectBodyLimit(s.cfg.MaxFrameBytes))
	mux.Handle(path, handler)
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.HandleFunc("GET /readyz", s.serveReady)
	if s.cfg.MetricsAddr == "" {
		s.handleMetrics(mux, reg)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if s.cfg.TLS != nil {
		protocols.SetHTTP2(true)
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	return &http.Server{
		Handler:           mux,
		Protocols:         protocols,
		ReadHeaderTimeout: s.cfg.HandshakeTimeout,
		// A whole request, body included, must arrive within this: a
		// trickled body cannot hold a connection.
		ReadTimeout:    s.cfg.HTTPReadTimeout,
		WriteTimeout:   s.cfg.HTTPReadTimeout + s.cfg.WriteTimeout,
		IdleTimeout:    s.cfg.IdleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// newMetricsServer serves /metrics, /debug/pprof/ (with Config.Pprof),
// /healthz and /readyz on Config.MetricsAddr. It sets no write timeout,
// so CPU profiles of any length work.
func (s *Server) newMetricsServer(reg *prometheus.Registry) *http.Server {
	mux := http.NewServeMux()
	s.handleMetrics(mux, reg)
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.HandleFunc("GET /readyz", s.serveReady)
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: s.cfg.HandshakeTimeout,
		ReadTimeout:       s.cfg.HTTPReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// handleMetrics adds /metrics and, with Config.Pprof, /debug/pprof/,
// behind Config.MetricsToken when one is set.
func (s *Server) handleMetrics(mux *http.ServeMux, reg *prometheus.Registry) {
	guard := s.metricsGuard
	mux.Handle("GET /metrics", guard(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	if s.cfg.Pprof {
		mux.Handle("/debug/pprof/", guard(http.HandlerFunc(pprof.Index)))
		mux.Handle("/debug/pprof/cmdline", guard(http.HandlerFunc(pprof.Cmdline)))
		mux.Handle("/debug/pprof/profile", guard(http.HandlerFunc(pprof.Profile)))
		mux.Handle("/debug/pprof/symbol", guard(http.HandlerFunc(pprof.Symbol)))
		mux.Handle("/debug/pprof/trace", guard(http.HandlerFunc(pprof.Trace)))
	}
}

// metricsGuard requires "Authorization: Bearer <Config.MetricsToken>",
// compared in constant time, when a token is set.
func (s *Server) metricsGuard(next http.Handler) http.Handler {
	if s.cfg.MetricsToken == "" {
		return next
	}
	want := []byte(s.cfg.MetricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="boomerang metrics"`)
			http.Error(w, "a metrics token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveHealth answers 200 while the process can serve, and 503 once a
// storage failure has stopped the scheduler: only a restart, which
// recovers from disk, can help then.
func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) {
	if s.sched != nil {
		if err := s.sched.Err(); err != nil {
			http.Error(w, "unhealthy: the scheduler stopped after a storage failure: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = w.Write([]byte("ok\n"))
}

// serveReady answers 200 while the store is open, the scheduler runs and
// the server is not stopping; 503 with the reason otherwise.
func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "not ready: starting or stopping", http.StatusServiceUnavailable)
		return
	}
	if err := s.sched.Err(); err != nil {
		http.Error(w, "not ready: the scheduler stopped after a storage failure: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}
