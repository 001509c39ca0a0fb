package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// Registrations read together. A client that pipelines RegisterTask
// requests on a raw TCP connection sends many per read; the connection
// takes every one already whole in its read buffer (up to maxCoalesced)
// and HandleRegisters registers them as one batch: one hand-off to each
// partition for all of them instead of a goroutine, a hand-off and a
// wait for each. Each request still gets its own response, the one
// Handle would have given it, and its own flow-control budget; a request
// is never held back waiting for others to arrive.

// maxCoalesced bounds the registrations handled as one batch.
const maxCoalesced = 256

// coalescable reports whether req may join a batch of registrations (on
// a connection that has logged in: the reader checks that).
func coalescable(req *boomerangv1.Request) bool {
	_, ok := req.Body.(*boomerangv1.Request_RegisterTask)
	return ok
}

// wholeFrameBuffered reports whether br holds a whole frame, so that
// reading it cannot wait on the network.
func wholeFrameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n == 0 {
		return false
	}
	head, _ := br.Peek(min(n, binary.MaxVarintLen64))
	size, k := binary.Uvarint(head)
	return k > 0 && uint64(n-k) >= size
}

// HandleRegisters answers RegisterTask requests, each as Handle would,
// registering those it can as one batch. Requests that are not all of
// one session, or whose session is not valid, are handled one by one.
func (s *Service) HandleRegisters(ctx context.Context, reqs []*boomerangv1.Request) (resps []*boomerangv1.Response) {
	resps = make([]*boomerangv1.Response, len(reqs))
	for i, req := range reqs {
		resps[i] = &boomerangv1.Response{RequestId: req.RequestId}
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("request panicked", "operation", "RegisterTask", "panic", r, "stack", string(debug.Stack()))
			for _, resp := range resps {
				resp.Body, resp.Error = nil, ErrorOf(fmt.Errorf("panic: %v", r))
			}
		}
	}()
	oneSession := !slices.ContainsFunc(reqs, func(r *boomerangv1.Request) bool { return r.SessionId != reqs[0].SessionId })
	p, err := s.Authenticate(reqs[0].SessionId)
	if err != nil || !oneSession {
		for i, req := range reqs {
			resps[i], _ = s.Handle(ctx, req)
		}
		return resps
	}
	ctx = withForwarder(ctx, s.fwd.Load())
	errs := s.registerTogether(ctx, p, reqs, resps)
	for i, req := range reqs {
		if errs[i] != nil {
			resps[i].Body, resps[i].Error = nil, ErrorOf(errs[i])
		}
		s.audited(p, "RegisterTask", req.GetRegisterTask(), errs[i])
	}
	return resps
}

// registerTogether registers the requests' tasks as one batch, setting
// each response's body, and returns each request's error. A task whose
// shard this node does not lead was refused before anything was done:
// it goes through RegisterTask alone, which forwards it to the leader,
// or answers NOT_LEADER when the request asked to be routed (route.go).
func (s *Service) registerTogether(ctx context.Context, p auth.Principal, reqs []*boomerangv1.Request, resps []*boomerangv1.Response) []error {
	errs := make([]error, len(reqs))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if err := writable(p); err != nil {
		return fail(err)
	}
	o, err := s.registrant(p.Client)
	if err != nil {
		return fail(err)
	}
	batch := make([]scheduler.RegisterRequest, 0, len(reqs))
	index := make([]int, 0, len(reqs)) // batch[j] is reqs[index[j]]
	now := s.clock.Now()
	for i, req := range reqs {
		r, err := o.registration(req.GetRegisterTask(), now)
		if err != nil {
			errs[i] = err
			continue
		}
		batch = append(batch, r)
		index = append(index, i)
	}
	answers, err := s.sched.RegisterBatch(ctx, batch)
	if err != nil {
		return fail(err)
	}
	var alone sync.WaitGroup
	for j, a := range answers {
		i := index[j]
		var nl *scheduler.NotLeaderError
		switch {
		case errors.As(a.Err, &nl):
			alone.Go(func() {
				errs[i] = run(withRoute(ctx, reqs[i].Route), p, reqs[i].GetRegisterTask(), s.RegisterTask, func(r *boomerangv1.RegisterTaskResponse) {
					resps[i].Body = &boomerangv1.Response_RegisterTask{RegisterTask: r}
				})
			})
		case a.Err != nil:
			errs[i] = a.Err
		default:
			resps[i].Body = &boomerangv1.Response_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskResponse{
				Task: taskToWire(a.View), Created: a.Created, Replaced: replaced(batch[j], a.Created),
			}}
		}
	}
	alone.Wait()
	return errs
}
