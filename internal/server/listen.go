package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// listen opens the raw TCP, HTTP and (when configured) metrics
// listeners, then serves them.
func (s *Server) listen(reg *prometheus.Registry) error {
	tcpLn, err := s.listener(s.cfg.TCPAddr, "TCP", s.cfg.TLS)
	if err != nil {
		return err
	}
	s.tcp = newTCPServer(&s.cfg, s.svc, s.m, tcpLn)
	budget := s.tcp.budget
	err = reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "boomerang_tcp_buffer_bytes",
		Help: "Bytes raw TCP connections hold in requests being served and responses not yet written (bounded by max-buffer-bytes).",
	}, func() float64 { return float64(budget.used.Load()) }))
	if err != nil {
		_ = tcpLn.Close()
		s.tcp = nil
		return err
	}
	if s.httpLn, err = s.listener(s.cfg.HTTPAddr, "HTTP", s.cfg.TLS); err != nil {
		return err
	}
	if s.cfg.MetricsAddr != "" {
		if s.metricLn, err = s.listener(s.cfg.MetricsAddr, "metrics", nil); err != nil {
			return err
		}
	}
	s.tcp.start()
	s.httpSrv = s.newHTTPServer(reg)
	s.serve(s.httpSrv, s.httpLn)
	if s.metricLn != nil {
		s.metricSrv = s.newMetricsServer(reg)
		s.serve(s.metricSrv, s.metricLn)
	}
	return nil
}

// listener listens on addr, through TLS when cfg is set.
func (s *Server) listener(addr, what string, cfg *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen on %s address %s: %w", what, addr, err)
	}
	if cfg != nil {
		cfg = cfg.Clone()
		if what == "HTTP" {
			cfg.NextProtos = []string{"h2", "http/1.1"}
		}
		ln = tls.NewListener(ln, cfg)
	}
	return ln, nil
}

func (s *Server) serve(srv *http.Server, ln net.Listener) {
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("HTTP server failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
}
