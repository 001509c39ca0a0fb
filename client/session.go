package client

import (
	"context"
	"errors"
	"sync"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Session is a login session on the server.
type Session struct {
	ID        string
	ExpiresAt time.Time
	Admin     bool
	Role      boomerangv1.Role
}

// Refresh timing: a session is refreshed once refreshShare of its
// lifetime has passed; a failed refresh is retried after a tenth of the
// time left, within [refreshRetryMin, refreshRetryMax].
const (
	refreshShare    = 2.0 / 3
	refreshRetryMin = 100 * time.Millisecond
	refreshRetryMax = 30 * time.Second
	refreshTimeout  = 10 * time.Second
)

// sessionState is the Client's current session. changed is signalled
// whenever it is replaced, so the refresh loop re-plans.
type sessionState struct {
	mu       sync.Mutex
	cur      Session
	obtained time.Time
	changed  chan struct{} // capacity 1
}

func (s *sessionState) init() { s.changed = make(chan struct{}, 1) }

func (s *sessionState) id() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.ID
}

func (s *sessionState) get() (Session, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur, s.obtained
}

func (s *sessionState) set(sess Session, now time.Time) {
	s.mu.Lock()
	s.cur, s.obtained = sess, now
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Session returns the session the Client currently uses; its ID is empty
// before the first login.
func (c *Client) Session() Session {
	s, _ := c.sess.get()
	return s
}

// renewSession handles a request refused for session stale. It reports
// whether the request is worth sending again: another call has already
// replaced the session, or this one logged in again.
//
// Logins and refreshes hold loginMu, so a request that raced with a
// refresh finds the new session here rather than logging in again.
func (c *Client) renewSession(ctx context.Context, stale string) bool {
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	if c.sess.id() != stale {
		return true
	}
	if !c.hasCredentials() {
		return false
	}
	if err := c.loginLocked(ctx); err != nil {
		c.log.Warn("logging in again failed", "client", c.creds.ClientID, "err", err)
		return false
	}
	return true
}

// loginLocked logs in with the Client's credentials. loginMu is held.
func (c *Client) loginLocked(ctx context.Context) error {
	req := &boomerangv1.Request{Body: &boomerangv1.Request_Login{Login: &boomerangv1.LoginRequest{
		ClientId: c.creds.ClientID, Password: c.creds.Password,
	}}}
	resp, err := c.roundTrip(ctx, req)
	if err != nil {
		return err
	}
	if e := resp.GetError(); e != nil {
		return newError(e)
	}
	_, err = need(resp, nil, (*boomerangv1.Response).GetLogin)
	return err
}

// refreshLoop refreshes the session before it expires, for as long as the
// Client is open.
func (c *Client) refreshLoop() {
	defer c.bg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait, ok := c.refreshDue(time.Now())
		if ok {
			timer.Reset(wait)
		} else {
			timer.Stop()
		}
		select {
		case <-c.stop:
			return
		case <-c.sess.changed:
			continue
		case <-timer.C:
		}
		err := c.refreshOnce()
		switch {
		case err == nil:
		case errors.Is(err, ErrSessionExpired) || errors.Is(err, ErrUnauthorized):
			// Without credentials (or with ones that no longer work) there
			// is nothing to retry until someone logs in.
			c.log.Warn("session refresh refused; waiting for a new login", "err", err)
			select {
			case <-c.stop:
				return
			case <-c.sess.changed:
			}
		default:
			sess, _ := c.sess.get()
			retry := min(max(time.Until(sess.ExpiresAt)/10, refreshRetryMin), refreshRetryMax)
			c.log.Warn("session refresh failed", "err", err, "retry_in", retry)
			timer.Reset(retry)
			select {
			case <-c.stop:
				return
			case <-c.sess.changed:
			case <-timer.C:
			}
		}
	}
}

// refreshDue says how long until the session should be refreshed, and
// false when there is no session to refresh.
func (c *Client) refreshDue(now time.Time) (time.Duration, bool) {
	sess, obtained := c.sess.get()
	if sess.ID == "" || sess.ExpiresAt.IsZero() {
		return 0, false
	}
	life := sess.ExpiresAt.Sub(obtained)
	at := obtained.Add(time.Duration(float64(life) * refreshShare))
	return max(at.Sub(now), 0), true
}

// refreshOnce replaces the session with a refreshed one, or with a new
// login when the server no longer knows it.
func (c *Client) refreshOnce() error {
	ctx, cancel := context.WithTimeout(c.life, refreshTimeout)
	defer cancel()
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	req := &boomerangv1.Request{
		SessionId: c.sess.id(),
		Body:      &boomerangv1.Request_RefreshSession{RefreshSession: &boomerangv1.RefreshSessionRequest{}},
	}
	resp, err := c.roundTrip(ctx, req)
	switch {
	case err != nil:
		return err
	case sessionRefused(resp.GetError()) && c.hasCredentials():
		return c.loginLocked(ctx)
	case resp.GetError() != nil:
		return newError(resp.GetError())
	}
	_, err = need(resp, nil, (*boomerangv1.Response).GetRefreshSession)
	return err
}
