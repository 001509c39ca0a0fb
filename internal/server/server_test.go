package server

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boomerangd/boomerang/internal/store"
)

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"tcp address":   {TCPAddr: "nonsense"},
		"http address":  {HTTPAddr: "also:nonsense:really"},
		"frame vs body": {MaxPayloadBytes: 1 << 20, MaxFrameBytes: 1 << 20},
		"frame limit":   {MaxFrameBytes: MaxFrameLimit + 1},
		"negative":      {IdleTimeout: -1},
		"partitions":    {Partitions: 3},
	} {
		cfg.DataDir = t.TempDir()
		if _, err := New(cfg); err == nil || !strings.HasPrefix(err.Error(), "server: Config.") {
			t.Errorf("%s: %v, want a configuration error", name, err)
		}
	}
}

func TestStartFailsCleanly(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := New(Config{DataDir: dir, TCPAddr: "127.0.0.1:0", HTTPAddr: busy.Addr().String(), PasswordHash: lightHash})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "listen on HTTP address") {
		t.Fatalf("Start with the HTTP port taken: %v", err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("a second Start succeeded")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop after a failed Start: %v", err)
	}
	// Everything was released: the store opens again.
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatalf("store still held after a failed Start: %v", err)
	}
	_ = st.Close()

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ = New(Config{DataDir: file, TCPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("Start with a file as the data directory succeeded")
	}
}

func TestSecondServerOnSameDirectory(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	s, err := New(Config{DataDir: ts.dir, TCPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second server on the same directory: %v, want store.ErrLocked", err)
	}
}

func TestStopBeforeStart(t *testing.T) {
	t.Parallel()
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.TCPAddr() != "" || s.HTTPAddr() != "" || s.BootstrapPassword() != "" {
		t.Fatal("addresses before Start")
	}
}

// The number of shards is chosen when the data directory is created and
// a start that asks for another is refused with the reason.
func TestShardsAreFixedAtCreation(t *testing.T) {
	shards := 8
	ts := startServer(t, func(c *Config) { c.Shards = shards })
	if got := ts.st.Shards(); got != 8 {
		t.Fatalf("a new store with Shards 8 has %d shards", got)
	}
	ts.stop(t)

	shards = 16
	s, err := New(Config{DataDir: ts.dir, TCPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		AdminPassword: adminPassword, PasswordHash: lightHash, Partitions: 2, Shards: shards})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	err = s.Start(context.Background())
	if err == nil {
		_ = s.Stop(context.Background())
		t.Fatal("a store of 8 shards started with Shards 16")
	}
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "has 8 shards, not 16") {
		t.Fatalf("start with another number of shards: %v", err)
	}

	shards = 0 // as recorded
	ts.start(t)
	if got := ts.st.Shards(); got != 8 {
		t.Fatalf("reopened with Shards 0: %d shards", got)
	}

	if _, err := New(Config{DataDir: ts.dir, Shards: 12, AdminPassword: adminPassword}); err == nil {
		t.Fatal("Shards 12 (not a power of two) accepted")
	}
}
