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
