package boomtool

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/boomerangd/boomerang/client"
)

// tlsFlags are the global TLS flags.
type tlsFlags struct {
	on        bool
	ca        string
	cert, key string
}

func (f *tlsFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "tls", false, "connect over TLS, checking the server's certificate against the system's CAs (or --ca)")
	fs.StringVar(&f.ca, "ca", "", "PEM file of the CA that signed the server's certificate; implies --tls (default $"+EnvCA+")")
	fs.StringVar(&f.cert, "cert", "", "PEM file of a client certificate, for servers that ask for one; implies --tls")
	fs.StringVar(&f.key, "key", "", "PEM file of the client certificate's key")
}

// settings are the TLS settings in effect: the flags, else the
// environment, else those of the saved session.
func (f *tlsFlags) settings(saved *savedSession, getenv func(string) string) tlsFlags {
	s := *f
	if s.ca == "" {
		s.ca = getenv(EnvCA)
	}
	if !s.on && s.ca == "" && s.cert == "" && saved != nil {
		s.on, s.ca, s.cert, s.key = saved.TLS, saved.CA, saved.Cert, saved.Key
	}
	s.on = s.on || s.ca != "" || s.cert != ""
	return s
}

// options returns the client options for the TLS settings in effect.
func (f *tlsFlags) options(saved *savedSession, getenv func(string) string) ([]client.Option, error) {
	s := f.settings(saved, getenv)
	if !s.on {
		return nil, nil
	}
	cfg, err := s.config()
	if err != nil {
		return nil, err
	}
	return []client.Option{client.WithTLS(cfg)}, nil
}

func (s tlsFlags) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.ca != "" {
		pem, err := os.ReadFile(s.ca)
		if err != nil {
			return nil, usagef("--ca: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usagef("--ca %s holds no PEM certificate", s.ca)
		}
	}
	if s.cert != "" || s.key != "" {
		if s.cert == "" || s.key == "" {
			return nil, usagef("give --cert and --key together")
		}
		pair, err := tls.LoadX509KeyPair(s.cert, s.key)
		if err != nil {
			return nil, usagef("--cert/--key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// saved returns the settings in effect as a session keeps them, with the
// files' absolute paths so that later commands find them from anywhere.
func (s tlsFlags) saved(sess *savedSession) {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil && p != "" {
			return a
		}
		return p
	}
	sess.TLS, sess.CA, sess.Cert, sess.Key = s.on, abs(s.ca), abs(s.cert), abs(s.key)
}

// dialOptions are the client options of every connection: the TLS
// settings in effect, and no routing: a command makes a request or a
// few, which the node dialed forwards to the shards' leaders, instead of
// fetching the routing view and dialing other nodes first.
func (a *app) dialOptions(saved *savedSession) ([]client.Option, error) {
	opts, err := a.tls.options(saved, a.env.Getenv)
	return append(opts, client.WithRouting(false)), err
}
