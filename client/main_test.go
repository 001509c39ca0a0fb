package client_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/boomerangd/boomerang/internal/server"
)

// The examples run against a real server in this process, on free ports,
// with its data in a temporary directory.
const (
	adminID       = "admin"
	adminPassword = "example-admin-password"
)

var (
	addr     string // the server's TCP address
	httpAddr string // its HTTP address, for /metrics
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "boomerang-client-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := server.New(server.Config{
		DataDir: dir, TCPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", AdminPassword: adminPassword,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "starting the server:", err)
		return 1
	}
	addr, httpAddr = srv.TCPAddr(), srv.HTTPAddr()
	code := m.Run()
	if err := srv.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the server:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}
