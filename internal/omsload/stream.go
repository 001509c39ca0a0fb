package omsload

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

const (
	// idShift puts the connection's index in the top bits of each client
	// order id, so an answer that arrives on the wrong connection shows.
	idShift = 40
	idMask  = 1<<idShift - 1
	// flushEvery bounds how many orders wait in the write buffer when
	// the sender is not about to wait anyway.
	flushEvery = 64
	// maxResponse is the largest response frame accepted.
	maxResponse = 64 << 10
)

// stream is one connection: a sender goroutine that writes orders and a
// receiver goroutine that checks answers. They share the records log,
// published through sent, and the window counters.
type stream struct {
	index int
	plan  streamPlan
	cfg   *Config
	b     *builder
	mix   []weighted
	nc    net.Conn
	base  time.Time // the run's start; times are ns since base
	recs  *records

	sent     atomic.Int64 // records published
	answered atomic.Int64 // records answered
	waiting  atomic.Bool  // the sender waits for room in the window
	room     chan struct{}
	recvDone chan struct{}

	sendErr error // sender only, read after it ends
	recvErr error // receiver only, read after recvDone
	tally   tally // receiver only, read after recvDone
}

func newStream(index int, p streamPlan, cfg *Config, b *builder, mix []weighted, nc net.Conn, base time.Time) *stream {
	return &stream{
		index: index, plan: p, cfg: cfg, b: b, mix: mix, nc: nc, base: base,
		recs:     newRecords(p.orders),
		room:     make(chan struct{}, 1),
		recvDone: make(chan struct{}),
		tally:    newTally(),
	}
}

func (st *stream) now() int64 { return int64(time.Since(st.base)) }

// send writes the stream's orders, on schedule in open loop or within the
// window in closed loop, until its count is reached, the deadline passes
// (deadline 0: none), ctx ends, or the connection fails. Then it
// half-closes the connection, so the server answers what it has and
// closes its side.
func (st *stream) send(ctx context.Context, deadline int64) {
	bw := bufio.NewWriterSize(st.nc, 64<<10)
	rng := rand.New(rand.NewPCG(st.cfg.Seed, uint64(st.index)))
	seqs := make(map[int64]uint64, len(st.plan.accounts))
	interval := 0.0
	if st.plan.rate > 0 {
		interval = 1e9 / st.plan.rate
	}
	var m omsv1.Order
	pending := 0
	for n := 0; (st.plan.orders < 0 || n < st.plan.orders) && n < st.recs.capacity(); n++ {
		if ctx.Err() != nil || st.ended() {
			break
		}
		now := st.now()
		if deadline > 0 && now >= deadline {
			break
		}
		intended := now
		if interval > 0 {
			intended = int64((float64(n) + st.plan.phase) * interval)
			if intended > now {
				if st.flush(bw, &pending) != nil {
					break
				}
				waitUntil(st.base, intended)
				now = st.now()
			}
		} else if !st.waitRoom(ctx, bw, &pending) {
			break
		}
		account := st.plan.accounts[rng.IntN(len(st.plan.accounts))]
		k := pickKind(st.mix, rng)
		seqs[account]++
		st.b.fill(&m, k, rng)
		m.CorrelationId, m.SeqInFamily = account, seqs[account]
		m.ClientOrderId = uint64(st.index)<<idShift | uint64(n)
		m.ClientTsNs = st.base.UnixNano() + now
		st.recs.put(n, record{account: account, seq: seqs[account], intended: intended, sentAt: now, kind: k})
		st.sent.Store(int64(n + 1))
		if st.sendErr = writeOrder(bw, &m, k); st.sendErr != nil {
			break
		}
		if pending++; pending >= flushEvery && st.flush(bw, &pending) != nil {
			break
		}
	}
	if st.sendErr == nil {
		_ = st.flush(bw, &pending)
	}
	if tc, ok := st.nc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func (st *stream) flush(bw *bufio.Writer, pending *int) error {
	*pending = 0
	if st.sendErr == nil && bw.Buffered() > 0 {
		st.sendErr = bw.Flush()
	}
	return st.sendErr
}

// ended reports that the receiver has stopped: the server closed the
// connection, so there is no point sending more.
func (st *stream) ended() bool {
	select {
	case <-st.recvDone:
		return true
	default:
		return false
	}
}

// waitRoom blocks while Window orders are unanswered. It reports false if
// the connection ended, ctx ended, or no answer came for DrainTimeout.
func (st *stream) waitRoom(ctx context.Context, bw *bufio.Writer, pending *int) bool {
	window := int64(st.cfg.Window)
	if st.sent.Load()-st.answered.Load() < window {
		return true
	}
	if st.flush(bw, pending) != nil {
		return false
	}
	stall := time.NewTimer(st.cfg.DrainTimeout)
	defer stall.Stop()
	for st.sent.Load()-st.answered.Load() >= window {
		st.waiting.Store(true)
		if st.sent.Load()-st.answered.Load() < window {
			st.waiting.Store(false)
			break
		}
		select {
		case <-st.room:
		case <-st.recvDone:
			return false
		case <-ctx.Done():
			return false
		case <-stall.C:
			return false
		}
	}
	return true
}

// receive reads and checks answers until the server closes the
// connection (or the run closes it after DrainTimeout).
func (st *stream) receive() {
	defer close(st.recvDone)
	br := bufio.NewReaderSize(st.nc, 64<<10)
	opts := protodelim.UnmarshalOptions{MaxSize: maxResponse}
	var m omsv1.Response
	for {
		err := opts.UnmarshalFrom(br, &m)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				st.recvErr = err
			}
			return
		}
		if st.tally.check(st, &m, st.now()) && st.waiting.Load() && st.waiting.CompareAndSwap(true, false) {
			st.room <- struct{}{}
		}
	}
}

// record returns the published record an answer refers to, or nil.
func (st *stream) record(clientOrderID uint64) *record {
	n := int64(clientOrderID & idMask)
	if clientOrderID>>idShift != uint64(st.index) || n >= st.sent.Load() {
		return nil
	}
	return st.recs.get(int(n))
}
