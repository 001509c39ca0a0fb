package server

import (
	"bufio"
	"net"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
)

// benchWindow is how many requests a benchmark connection keeps in
// flight.
const benchWindow = 64

// pipeline sends b.N requests made by next over conns connections,
// keeping benchWindow in flight on each, and fails on any error.
func pipeline(b *testing.B, addr, session string, conns int, next func(i int) *boomerangv1.Request) {
	b.Helper()
	var wg sync.WaitGroup
	per := b.N / conns
	for c := range conns {
		n := per
		if c == 0 {
			n += b.N % conns
		}
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		wg.Go(func() {
			br := bufio.NewReader(nc)
			bw := bufio.NewWriter(nc)
			sent, got := 0, 0
			for got < n {
				for sent < n && sent-got < benchWindow {
					req := next(sent)
					req.RequestId, req.SessionId = uint64(sent+1), session
					if _, err := protodelim.MarshalTo(bw, req); err != nil {
						b.Error(err)
						return
					}
					sent++
				}
				if err := bw.Flush(); err != nil {
					b.Error(err)
					return
				}
				var resp boomerangv1.Response
				if err := protodelim.UnmarshalFrom(br, &resp); err != nil {
					b.Error(err)
					return
				}
				if resp.Error != nil {
					b.Errorf("request %d: %v", resp.RequestId, resp.Error)
					return
				}
				got++
			}
		})
	}
	wg.Wait()
}

func benchServer(b *testing.B, tune func(*Config)) (*testServer, string) {
	ts := startServer(b, tune)
	ts.addClients(b)
	login, err := ts.svc.Login(ctx, &boomerangv1.LoginRequest{ClientId: "alice", Password: "alice-password"})
	if err != nil {
		b.Fatal(err)
	}
	return ts, login.SessionId
}

// BenchmarkServiceInfo is the baseline: GetServerInfo called directly,
// without a transport.
func BenchmarkServiceInfo(b *testing.B) {
	ts, session := benchServer(b, nil)
	req := &boomerangv1.Request{RequestId: 1, SessionId: session, Body: infoReq().Body}
	b.ReportAllocs()
	for b.Loop() {
		if resp, _ := ts.svc.Handle(ctx, req); resp.Error != nil {
			b.Fatal(resp.Error)
		}
	}
}

// BenchmarkTCPInfo measures the raw TCP transport: framing, the reader,
// a goroutine per request and the writer, with a request that does no
// I/O.
func BenchmarkTCPInfo(b *testing.B) {
	ts, session := benchServer(b, nil)
	b.ReportAllocs()
	b.ResetTimer()
	pipeline(b, ts.TCPAddr(), session, 1, func(int) *boomerangv1.Request { return infoReq() })
}

// BenchmarkTCPRegister measures durable registrations over raw TCP: each
// is acknowledged after its synced commit, which concurrent requests
// share.
func BenchmarkTCPRegister(b *testing.B) {
	for _, conns := range []int{1, 4} {
		b.Run(map[int]string{1: "conns=1", 4: "conns=4"}[conns], func(b *testing.B) {
			ts, session := benchServer(b, nil)
			payload := make([]byte, 100)
			b.ReportAllocs()
			b.ResetTimer()
			pipeline(b, ts.TCPAddr(), session, conns, func(int) *boomerangv1.Request {
				return registerReq(&boomerangv1.RegisterTaskRequest{Payload: payload, When: delay(3_600_000)})
			})
		})
	}
}

// BenchmarkConnectRegister measures durable registrations over the
// Connect protocol (HTTP/1.1, binary), from parallel callers.
func BenchmarkConnectRegister(b *testing.B) {
	ts, session := benchServer(b, nil)
	c := connectClients(b, ts.HTTPAddr())["connect"]
	payload := make([]byte, 100)
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.RegisterTask(ctx, withSession(&boomerangv1.RegisterTaskRequest{Payload: payload, When: delay(3_600_000)}, session)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkLogin measures a login: one argon2id verification with the
// production parameters.
func BenchmarkLogin(b *testing.B) {
	ts, _ := benchServer(b, func(c *Config) { c.PasswordHash = auth.HashParams{} })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ts.svc.Login(ctx, &boomerangv1.LoginRequest{ClientId: "alice", Password: "alice-password"}); err != nil {
			b.Fatal(err)
		}
	}
}
