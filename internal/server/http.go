package server

import (
	"log/slog"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxHeaderBytes bounds an HTTP request's headers.
const maxHeaderBytes = 64 << 10

// newHTTPServer serves the Connect handler, /metrics, /healthz and
// /readyz, and /debug/pprof/ when Config.Pprof is set. Cleartext HTTP/2 (h2c, with prior knowledge) is on beside
// HTTP/1.1, so gRPC clients work without TLS.
func (s *Server) newHTTPServer(reg *prometheus.Registry) *http.Server {
	mux := http.NewServeMux()
	path, handler := newConnectHandler(s.svc, s.m, s.cfg.MaxFrameBytes)
	mux.Handle(path, handler)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.HandleFunc("GET /readyz", s.serveReady)
	if s.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}

	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:           mux,
		Protocols:         protocols,
		ReadHeaderTimeout: s.cfg.HandshakeTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
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
