package delivery

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/activemqtest"
)

// TestActiveMQTLS sends over activemqs:// to a broker whose certificate
// a private CA signed: trusted through SinkRootCAs, refused without it.
func TestActiveMQTLS(t *testing.T) {
	cas, cert := privateCA(t)
	b := activemqtest.StartTLS(t, cert)

	t.Run("the private CA trusted", func(t *testing.T) {
		sub := b.Consumer("/queue/orders.tls")
		e, _ := newEngine(t, activemqCallback(b.TLSURL("/queue/orders.tls")), func(c *Config) { c.SinkRootCAs = cas })
		if err := deliver(e, task("over tls"), 1).wait(t); err != nil {
			t.Fatal(err)
		}
		if m := next(t, sub); string(m.Body) != "over tls" {
			t.Fatalf("body %q", m.Body)
		}
	})

	t.Run("only the system's CAs", func(t *testing.T) {
		e, _ := newEngine(t, activemqCallback(b.TLSURL("/queue/orders.tls")), nil)
		err := deliver(e, task("x"), 1).wait(t)
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) || IsPermanent(err) {
			t.Fatalf("err = %v, want an unknown authority, retryable", err)
		}
	})
}

// privateCA makes a CA and a certificate it signs for 127.0.0.1.
func privateCA(t *testing.T) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}
}
