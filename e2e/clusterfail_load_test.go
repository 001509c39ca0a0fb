package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/history"
)

// clientsEverywhere makes the load generator register its own client
// and use it through every node, as clients and sessions are shared by
// the whole cluster. Off, it acts as admin, which every node also knows
// from --admin-password: for a cluster whose nodes keep clients of their
// own.
var clientsEverywhere = flag.Bool("cluster.clients-everywhere", true,
	"failure suite: register a client of its own and use it through every node (false: act as admin)")

// loadgen registers, updates and cancels grouped and ungrouped tasks
// through every node it was given, records every request and answer in
// a history, and keeps going through faults: a request that fails is
// tried again through another node with the same idempotency key.
type loadgen struct {
	t       *testing.T
	hist    *history.History
	client  string // the client the tasks are registered as
	url     string
	clients []*client.Client
	stop    chan struct{}
	wg      sync.WaitGroup
}

// loadWorkers and their pace: each sends at most one request per
// loadPace, so that the generator leaves room on a shared 2-core machine.
const (
	groupWorkers     = 4
	ungroupedWorkers = 2
	loadPace         = 40 * time.Millisecond
	opPatience       = 30 * time.Second // how long a request is retried before it is left unanswered
)

// startLoad starts the generator against the running nodes, delivering
// to url, seeded with seed.
func startLoad(t *testing.T, c *fcluster, hist *history.History, url string, seed uint64) *loadgen {
	t.Helper()
	g := &loadgen{t: t, hist: hist, url: url, stop: make(chan struct{})}
	id, password := "admin", adminPassword
	if *clientsEverywhere {
		id, password = "load", "load-password-1"
		if _, err := c.any().RegisterClient(testContext(t), &boomerangv1.RegisterClientRequest{ClientId: id, Password: password}); err != nil {
			t.Fatal(err)
		}
	}
	g.client = id
	for _, nd := range c.running() {
		g.clients = append(g.clients, nd.login(t, id, password))
	}
	for w := range groupWorkers + ungroupedWorkers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		group := ""
		if w < groupWorkers {
			group = "g" + strconv.Itoa(w)
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.work(rng, group, w)
		}()
	}
	t.Cleanup(g.halt)
	return g
}

// halt stops the generator once its requests under way are answered or
// given up.
func (g *loadgen) halt() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	g.wg.Wait()
}

func (g *loadgen) stopped() bool {
	select {
	case <-g.stop:
		return true
	default:
		return false
	}
}

// work is one worker: a group's tasks one after another, due times only
// growing, so that registration order is the group's (due, seq) order.
func (g *loadgen) work(rng *rand.Rand, group string, w int) {
	pace := time.NewTicker(loadPace)
	defer pace.Stop()
	var lastDue int64
	var mine []uint64
	for rank := 0; !g.stopped(); rank++ {
		due := max(lastDue+1+rng.Int64N(20), time.Now().Add(300*time.Millisecond+time.Duration(rng.Int64N(int64(1500*time.Millisecond)))).UnixMilli())
		id, ok := g.register(rng, fmt.Sprintf("w%d-%d", w, rank), group, rank, due)
		lastDue = due
		if ok {
			mine = append(mine, id)
			if rng.IntN(8) == 0 {
				lastDue = max(lastDue, g.update(rng, id, due+50+rng.Int64N(400)))
			}
		}
		if len(mine) > 0 && rng.IntN(6) == 0 {
			g.cancel(rng, mine[rng.IntN(len(mine))])
		}
		select {
		case <-pace.C:
		case <-g.stop:
		}
	}
}

// try sends a request through random nodes until it is answered with
// success or a final error, or opPatience passes; it returns the last
// error.
func (g *loadgen) try(rng *rand.Rand, final func(error) bool, call func(ctx context.Context, c *client.Client) error) error {
	start := time.Now()
	retry := time.NewTicker(100 * time.Millisecond)
	defer retry.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := call(ctx, g.clients[rng.IntN(len(g.clients))])
		cancel()
		if err == nil || final(err) || time.Since(start) > opPatience {
			return err
		}
		<-retry.C
	}
}

func (g *loadgen) register(rng *rand.Rand, key, group string, rank int, due int64) (uint64, bool) {
	r := history.Registration{Key: key, Group: group, Rank: rank, Due: due, Sent: time.Now()}
	req := &boomerangv1.RegisterTaskRequest{
		Payload: []byte(key), Group: group, IdempotencyKey: key, When: &boomerangv1.RegisterTaskRequest_FireAtMs{FireAtMs: due},
		Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: g.url},
	}
	err := g.try(rng, isFinal, func(ctx context.Context, c *client.Client) error {
		resp, err := c.RegisterTask(ctx, req)
		if err == nil {
			r.ID = resp.GetTask().GetId()
		}
		return err
	})
	if err == nil {
		r.Acked, r.AckedAt = true, time.Now()
	} else if isFinal(err) {
		g.t.Errorf("registration %s refused: %v", key, err)
	}
	g.hist.Register(r)
	return r.ID, r.Acked
}

// update moves a task's due time and returns it.
func (g *loadgen) update(rng *rand.Rand, id uint64, due int64) int64 {
	u := history.Update{ID: id, Due: due, Sent: time.Now()}
	req := &boomerangv1.UpdateTaskRequest{Id: id, When: &boomerangv1.UpdateTaskRequest_FireAtMs{FireAtMs: due}}
	if err := g.try(rng, isFinal, func(ctx context.Context, c *client.Client) error {
		_, err := c.UpdateTask(ctx, req)
		return err
	}); err == nil {
		u.Acked, u.AckedAt = true, time.Now()
	}
	g.hist.Update(u)
	return due
}

// cancel cancels a task. A refusal (the task is gone or being delivered)
// says the cancel was not done only if it answered the first attempt:
// after an attempt that may have taken effect (a timeout, a lost
// connection, BUSY while the shard changed leaders), that attempt's
// deletion may still be committed, and "not found" may be its effect.
func (g *loadgen) cancel(rng *rand.Rand, id uint64) {
	x := history.Cancel{ID: id, Sent: time.Now()}
	ambiguous := false
	err := g.try(rng, isFinal, func(ctx context.Context, c *client.Client) error {
		_, err := c.CancelTask(ctx, &boomerangv1.CancelTaskRequest{Id: id})
		ambiguous = ambiguous || err != nil && !isFinal(err)
		return err
	})
	x.AckedAt = time.Now()
	switch {
	case err == nil:
		x.Outcome = history.Acked
	case isFinal(err) && !ambiguous:
		x.Outcome = history.Refused
	}
	g.hist.Cancel(x)
}

// isFinal reports whether an error answers the request for good: the
// task is gone or being delivered. Anything else (BUSY, a lost
// connection, a timeout) may or may not have taken effect and is tried
// again.
func isFinal(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && (e.Status == boomerangv1.Status_STATUS_NOT_FOUND || e.Status == boomerangv1.Status_STATUS_CONFLICT ||
		e.Status == boomerangv1.Status_STATUS_INVALID_REQUEST)
}

// startHistoryReceiver records every webhook call in the history, with
// when it arrived and when it was answered, so that two calls of one
// group at once show as overlapping.
func startHistoryReceiver(t *testing.T, hist *history.History) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		d := history.Delivery{Arrived: time.Now(), Group: req.Header.Get("Boomerang-Group")}
		d.TaskID, _ = strconv.ParseUint(req.Header.Get("Boomerang-Task-Id"), 10, 64)
		d.FireAt, _ = strconv.ParseInt(req.Header.Get("Boomerang-Fire-At"), 10, 64)
		d.Attempt, _ = strconv.Atoi(req.Header.Get("Boomerang-Attempt"))
		d.Term, _ = strconv.ParseUint(req.Header.Get("Boomerang-Term"), 10, 64)
		body, _ := io.ReadAll(io.LimitReader(req.Body, 256))
		d.Key = string(body)
		d.Done = time.Now()
		hist.Deliver(d)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook"
}
