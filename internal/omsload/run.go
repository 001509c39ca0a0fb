package omsload

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// Run dials the server, plays the scenario, waits for the answers and
// checks them. It returns an error only if the run could not start;
// violations are in the report. Ending ctx stops sending early.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sc := scenarios[cfg.Scenario]
	b, err := newBuilder(cfg.Risk, sc.mix)
	if err != nil {
		return nil, err
	}
	plans := plan(&cfg)
	conns, err := dial(ctx, cfg.Addr, len(plans))
	if err != nil {
		return nil, err
	}
	base := time.Now()
	streams := make([]*stream, len(plans))
	for i, p := range plans {
		streams[i] = newStream(i, p, &cfg, b, sc.mix, conns[i], base)
		go streams[i].receive()
	}
	var deadline int64
	if cfg.Duration > 0 && cfg.Rate == 0 {
		deadline = int64(cfg.Duration)
	}
	var senders sync.WaitGroup
	for _, st := range streams {
		senders.Go(func() { st.send(ctx, deadline) })
	}
	senders.Wait()
	drain(streams, cfg.DrainTimeout)
	for _, nc := range conns {
		_ = nc.Close()
	}
	return build(&cfg, streams), nil
}

func dial(ctx context.Context, addr string, n int) ([]net.Conn, error) {
	var d net.Dialer
	conns := make([]net.Conn, 0, n)
	for range n {
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			for _, c := range conns {
				_ = c.Close()
			}
			return nil, fmt.Errorf("omsload: %w", err)
		}
		conns = append(conns, nc)
	}
	return conns, nil
}

// drain waits for every receiver to see the server close its side, for up
// to timeout; then it closes the connections that are left, so their
// receivers stop and their unanswered orders count as missing.
func drain(streams []*stream, timeout time.Duration) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for _, st := range streams {
		select {
		case <-st.recvDone:
			continue
		case <-timer.C:
		}
		for _, st := range streams {
			_ = st.nc.Close()
		}
		for _, st := range streams {
			<-st.recvDone
		}
		return
	}
}
