package omsload

import (
	"bufio"
	"errors"
	"flag"
	"net"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
	"github.com/boomerangd/boomerang/internal/oms"
)

var benchRate = flag.Float64("omsload.rate", 50_000, "BenchmarkLoopback's offered load in orders/s (0: closed loop)")

// BenchmarkLoopback runs b.N many-families orders through the Mini-OMS
// (zero execution time) and, as a baseline, through a plain TCP echo
// server that answers each order ACK straight from its reader: the same
// generator, protocol and loopback, without the engine, its goroutine
// hand-offs or the stages. Client and server share the process. Compare
// the two in one run:
//
//	go test -run '^$' -bench Loopback -benchtime 200000x ./internal/omsload -omsload.rate 50000
func BenchmarkLoopback(b *testing.B) {
	b.Run("echo", func(b *testing.B) {
		addr, stop := startEcho(b)
		defer stop()
		benchLoopback(b, addr)
	})
	b.Run("minioms", func(b *testing.B) {
		srv, err := oms.New(oms.Config{Listen: "127.0.0.1:0"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := srv.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		defer srv.Stop()
		benchLoopback(b, srv.Addr().String())
	})
}

func benchLoopback(b *testing.B, addr string) {
	r, err := Run(b.Context(), Config{Addr: addr, Scenario: "many-families", Rate: *benchRate, Orders: b.N})
	if err != nil {
		b.Fatal(err)
	}
	if r.Violations() != 0 {
		b.Fatalf("violations: %+v", r)
	}
	b.ReportMetric(r.ThroughputPerS, "orders/s")
	b.ReportMetric(r.P50us, "p50-µs")
	b.ReportMetric(r.P99us, "p99-µs")
	b.ReportMetric(r.P999us, "p99.9-µs")
}

// startEcho serves the protocol with one goroutine per connection that
// answers every order ACK as it reads it, flushing whenever it has read
// everything that has arrived.
func startEcho(b *testing.B) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { echo(nc) })
		}
	})
	return ln.Addr().String(), func() {
		ln.Close()
		wg.Wait()
	}
}

func echo(nc net.Conn) {
	defer nc.Close()
	br, bw := bufio.NewReaderSize(nc, 64<<10), bufio.NewWriterSize(nc, 64<<10)
	var o omsv1.Order
	var r omsv1.Response
	for {
		if err := protodelim.UnmarshalFrom(br, &o); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			bw.Flush()
			return // EOF: the client is done; closing answers its half-close
		}
		r.CorrelationId, r.SeqInFamily, r.ClientOrderId = o.CorrelationId, o.SeqInFamily, o.ClientOrderId
		r.Decision, r.ClientTsNs = omsv1.Decision_DECISION_ACK, o.ClientTsNs
		if _, err := protodelim.MarshalTo(bw, &r); err != nil {
			return
		}
		if br.Buffered() == 0 && bw.Flush() != nil {
			return
		}
	}
}
