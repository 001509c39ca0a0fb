package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/api/boomerang/v1/boomerangv1connect"
	"github.com/boomerangd/boomerang/client"
)

// pki is a CA with a server and a client certificate, as PEM files.
type pki struct {
	dir                   string
	pool                  *x509.CertPool
	ca, cert, key         string // files: CA, server certificate and key
	clientCert, clientKey string
	clientPair            tls.Certificate
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir(), pool: x509.NewCertPool()}
	caKey, caCert := issue(t, "test CA", nil, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid, c.KeyUsage = true, true, x509.KeyUsageCertSign
	})
	p.pool.AddCert(caCert)
	p.ca = p.write(t, "ca.pem", "CERTIFICATE", caCert.Raw)
	key, cert := issue(t, "boomerang", caCert, caKey, func(c *x509.Certificate) {
		c.IPAddresses, c.DNSNames = []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	p.cert = p.write(t, "server.pem", "CERTIFICATE", cert.Raw)
	p.key = p.write(t, "server-key.pem", "PRIVATE KEY", marshalKey(t, key))
	ckey, ccert := issue(t, "a client", caCert, caKey, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	p.clientCert = p.write(t, "client.pem", "CERTIFICATE", ccert.Raw)
	p.clientKey = p.write(t, "client-key.pem", "PRIVATE KEY", marshalKey(t, ckey))
	pair, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	p.clientPair = pair
	return p
}

// issue makes a key and a certificate for it, signed by parent (nil: by
// itself).
func issue(t *testing.T, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tune func(*x509.Certificate)) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	tune(tmpl)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

func marshalKey(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (p *pki) clientTLS(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.clientPair}
	}
	return cfg
}

// Both ports speak TLS with --tls-cert and --tls-key: the SDK, boomtool
// and Connect clients connect with the CA; plain connections fail.
func TestTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	s := startServer(t, "", "--tls-cert", p.cert, "--tls-key", p.key)
	ctx := testContext(t)

	c := s.dial(t, "admin", adminPassword, client.WithTLS(p.clientTLS(false)))
	if _, err := c.GetServerInfo(ctx, &boomerangv1.GetServerInfoRequest{}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if plain, err := client.Dial(short, s.tcp, client.Credentials{ClientID: "admin", Password: adminPassword}); err == nil {
		plain.Close()
		t.Fatal("a plain TCP client got through to a TLS port")
	}
	if _, err := client.Dial(short, s.tcp, client.Credentials{ClientID: "admin", Password: adminPassword},
		client.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12})); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("TLS without trusting the CA: %v", err)
	}

	cli := newCLI(t, s.tcp)
	if out := cli.ok("login", "--client", "admin", "--password", adminPassword, "--ca", p.ca); !strings.Contains(out, "Logged in") {
		t.Fatalf("login over TLS printed %q", out)
	}
	cli.ok("info") // the saved session remembers TLS and the CA
	newCLI(t, s.tcp).fails(1, "", "info", "--client", "admin", "--password", adminPassword)

	tr := &http.Transport{TLSClientConfig: p.clientTLS(false), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	for _, opts := range [][]connect.ClientOption{nil, {connect.WithGRPC()}} {
		svc := boomerangv1connect.NewBoomerangServiceClient(hc, "https://"+s.http, opts...)
		if _, err := svc.Login(ctx, connect.NewRequest(&boomerangv1.LoginRequest{ClientId: "admin", Password: adminPassword})); err != nil {
			t.Fatalf("Connect over TLS (%d options): %v", len(opts), err)
		}
	}
	if resp, err := hc.Get("https://" + s.http + "/healthz"); err != nil || resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("GET /healthz over TLS: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// With --tls-client-ca every connection must show a certificate the CA
// signed.
func TestTLSClientCertificates(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	s := startServer(t, "", "--tls-cert", p.cert, "--tls-key", p.key, "--tls-client-ca", p.ca)
	ctx := testContext(t)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if c, err := client.Dial(short, s.tcp, client.Credentials{ClientID: "admin", Password: adminPassword}, client.WithTLS(p.clientTLS(false))); err == nil || !strings.Contains(err.Error(), "certificate") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a client without a certificate: %v", err)
	}
	c := s.dial(t, "admin", adminPassword, client.WithTLS(p.clientTLS(true)))
	if _, err := c.GetServerInfo(ctx, &boomerangv1.GetServerInfoRequest{}); err != nil {
		t.Fatal(err)
	}
	cli := newCLI(t, s.tcp)
	cli.ok("info", "--client", "admin", "--password", adminPassword, "--ca", p.ca, "--cert", p.clientCert, "--key", p.clientKey)
	cli.fails(1, "certificate", "info", "--client", "admin", "--password", adminPassword, "--ca", p.ca, "--timeout", "2s")
}
