package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --sink-ca adds a CA file's certificates to those trusted for brokers.
func TestSinkCA(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "private CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file, empty := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	o, err := parse(t, nil, map[string]string{"BOOMERANG_SINK_CA": file}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Verify(x509.VerifyOptions{Roots: o.cfg.SinkRootCAs}); err != nil {
		t.Fatalf("the CA of --sink-ca is not trusted: %v", err)
	}
	if o, err = parse(t, nil, nil, ""); err != nil || o.cfg.SinkRootCAs != nil {
		t.Fatalf("default: %v, %v; want the system's (nil)", o.cfg.SinkRootCAs, err)
	}
	for _, bad := range []string{empty, filepath.Join(dir, "missing.pem")} {
		if _, err := parse(t, []string{"--sink-ca", bad}, nil, ""); err == nil || !strings.Contains(err.Error(), "--sink-ca") {
			t.Errorf("--sink-ca %s: %v, want an error naming the flag", bad, err)
		}
	}
}
