package delivery

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// clientInfo is what deliveries need of a client, resolved once.
type clientInfo struct {
	unknown  bool // not registered
	callback *storepb.Callback
	retry    *storepb.RetryPolicy // complete: the client's over Config.DefaultRetry
	signers  []signer             // newest first; none without a signing secret
	policy   *egress.Policy       // the server's callback policy narrowed by the client's rules
	route    route                // the client's own callback, when routeErr is nil
	routeErr error
}

// signer signs with one of a client's secrets until its expiry (zero:
// never).
type signer struct {
	*webhook.Signer
	until time.Time
}

// signersAt returns the signers whose secrets are still valid at now.
func (c *clientInfo) signersAt(now time.Time) []*webhook.Signer {
	out := make([]*webhook.Signer, 0, len(c.signers))
	for _, s := range c.signers {
		if s.until.IsZero() || now.Before(s.until) {
			out = append(out, s.Signer)
		}
	}
	return out
}

// clientEntry caches one client. Deliver reads it without a lock while it
// is fresh; a stale or missing entry is loaded off the caller's goroutine
// while the attempts that need it wait in the entry.
type clientEntry struct {
	info  atomic.Pointer[clientInfo] // last loaded; kept while stale for Next
	fresh atomic.Bool

	mu      sync.Mutex
	gen     uint64 // bumped by Invalidate
	loading bool
	waiting []*attempt
}

type clientCache struct {
	entries sync.Map // client id → *clientEntry
}

func (c *clientCache) entry(id string) *clientEntry {
	if v, ok := c.entries.Load(id); ok {
		return v.(*clientEntry)
	}
	v, _ := c.entries.LoadOrStore(id, &clientEntry{})
	return v.(*clientEntry)
}

// peek returns the last loaded state of a known client, or nil.
func (c *clientCache) peek(id string) *clientInfo {
	v, ok := c.entries.Load(id)
	if !ok {
		return nil
	}
	info := v.(*clientEntry).info.Load()
	if info == nil || info.unknown {
		return nil
	}
	return info
}

// Invalidate makes the engine read the client's configuration again
// before its next delivery. Call it after a client is changed or
// deregistered. Until then, retry decisions use what was last read.
func (e *Engine) Invalidate(clientID string) {
	v, ok := e.clients.entries.Load(clientID)
	if !ok {
		return
	}
	ent := v.(*clientEntry)
	ent.mu.Lock()
	ent.gen++
	ent.fresh.Store(false)
	ent.mu.Unlock()
}

// withClient runs dispatch for a once its client is known: at once when
// cached, else after a load on another goroutine.
func (e *Engine) withClient(a *attempt) {
	ent := e.clients.entry(a.task.Client)
	if ent.fresh.Load() {
		e.dispatch(a, ent.info.Load())
		return
	}
	ent.mu.Lock()
	if ent.fresh.Load() {
		ent.mu.Unlock()
		e.dispatch(a, ent.info.Load())
		return
	}
	ent.waiting = append(ent.waiting, a)
	if !ent.loading {
		ent.loading = true
		go e.load(a.task.Client, ent, ent.gen)
	}
	ent.mu.Unlock()
}

func (e *Engine) load(id string, ent *clientEntry, gen uint64) {
	rec, err := e.cfg.Clients.Client(id)
	var details *Details
	if cd, ok := e.cfg.Clients.(ClientDetails); ok && err == nil {
		var d Details
		d, err = cd.ClientDetails(id)
		details = &d
	}
	var info *clientInfo
	switch {
	case err == nil:
		info = e.newClientInfo(rec, details)
	case errors.Is(err, store.ErrNotFound):
		info = &clientInfo{unknown: true}
	default:
		e.cfg.Logger.Warn("delivery: reading a client failed", "client", id, "err", err)
	}
	ent.mu.Lock()
	waiting := ent.waiting
	ent.waiting, ent.loading = nil, false
	if info != nil {
		ent.info.Store(info)
		ent.fresh.Store(ent.gen == gen) // invalidated meanwhile: read again next time
	}
	ent.mu.Unlock()
	for _, a := range waiting {
		if info == nil {
			// Not an attempt: nothing reached the endpoint, and a node
			// whose copy of the clients is catching up must not use up
			// the task's retries.
			a.reject(&refusal{fmt.Sprintf("delivery: reading client %q: %v", id, err)})
			continue
		}
		e.dispatch(a, info)
	}
}

// newClientInfo resolves a client's record and, when the ClientSource
// gives them, its details.
func (e *Engine) newClientInfo(c *storepb.Client, d *Details) *clientInfo {
	info := &clientInfo{
		callback: c.GetCallback(),
		retry:    fillRetry(c.GetRetry(), e.cfg.DefaultRetry),
		policy:   e.cfg.Egress,
	}
	switch {
	case d != nil:
		for _, s := range d.Secrets {
			info.signers = append(info.signers, signer{Signer: webhook.NewSigner(s.Key), until: s.Until})
		}
		info.policy = e.cfg.Egress.Narrow(d.Rules)
	case len(c.GetSigningSecret()) > 0:
		info.signers = []signer{{Signer: webhook.NewSigner(c.GetSigningSecret())}}
	}
	info.route, info.routeErr = e.newRoute(info.callback, info.policy)
	return info
}
