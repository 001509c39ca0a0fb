package delivery

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// BenchmarkEngine measures the engine alone, without a scheduler: b.N
// deliveries of a 64-byte payload to a receiver in this process on
// loopback, at most 256 under way (the default pool). ns/op is wall time
// per delivery on all cores.
func BenchmarkEngine(b *testing.B) {
	for _, protocol := range benchProtocols[1:] {
		b.Run(protocol, func(b *testing.B) {
			var handled atomic.Int64
			cb, stop := benchReceiver(b, protocol, &handled)
			defer stop()
			e, err := New(Config{Clients: newClientMap(&storepb.Client{Id: "acme", Callback: cb, SigningSecret: testSecret}), TCPConns: *benchConns})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close(context.Background())
			payload := make([]byte, 64)
			window := make(chan struct{}, DefaultMaxConcurrent)
			var wg sync.WaitGroup
			var failed atomic.Int64
			b.ResetTimer()
			for i := range b.N {
				window <- struct{}{}
				wg.Add(1)
				e.Deliver(scheduler.Delivery{Task: &storepb.Task{Id: uint64(i + 1), Client: "acme", Payload: payload, DueMs: 1}, Attempt: 1, Term: 1},
					func(err error) {
						if err != nil {
							failed.Add(1)
						}
						<-window
						wg.Done()
					})
			}
			wg.Wait()
			b.StopTimer()
			if failed.Load() > 0 {
				b.Fatalf("%d deliveries failed", failed.Load())
			}
		})
	}
}

// BenchmarkPlainHTTP is BenchmarkEngine/http's baseline: the same POSTs
// straight from a net/http client to a net/http server that answers 204,
// 256 at a time, with no signing, headers, pool or receiver checks.
func BenchmarkPlainHTTP(b *testing.B) {
	ln := listen(b)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: DefaultMaxConcurrent}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	url := "http://" + ln.Addr().String() + "/hook"
	payload := make([]byte, 64)
	window := make(chan struct{}, DefaultMaxConcurrent)
	var wg sync.WaitGroup
	b.ResetTimer()
	for range b.N {
		window <- struct{}{}
		wg.Go(func() {
			defer func() { <-window }()
			resp, err := hc.Post(url, "application/octet-stream", bytes.NewReader(payload))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
}
