package auth

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func TestBootstrapGeneratesOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	pw, created, err := f.a.Bootstrap("admin", "")
	if err != nil || !created || len(pw) < 20 {
		t.Fatalf("Bootstrap = %q, %v, %v; want a generated password", pw, created, err)
	}
	s := f.login(t, "admin", pw)
	if s.Role != RoleAdmin || s.Client != "admin" {
		t.Fatalf("session %+v, want the admin", s)
	}
	f.reopen(t)
	again, created, err := f.a.Bootstrap("admin", "another-password")
	if err != nil || created || again != "" {
		t.Fatalf("second Bootstrap = %q, %v, %v; want nothing done", again, created, err)
	}
	f.login(t, "admin", pw) // the first password survived the restart
	if _, err := f.a.Login("admin", "another-password", testSource); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("login with the ignored password: %v", err)
	}
}

func TestBootstrapGivenPassword(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	pw, created, err := f.a.Bootstrap("root", "s3cret-pass")
	if err != nil || !created || pw != "" {
		t.Fatalf("Bootstrap = %q, %v, %v", pw, created, err)
	}
	f.login(t, "root", "s3cret-pass")
	if _, _, err := newFixture(t, nil).a.Bootstrap("root", "short"); !errors.Is(err, scheduler.ErrInvalid) {
		t.Fatalf("Bootstrap with a short password: %v", err)
	}
}

func TestLoginThrottlesPerClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.register(t, "alice", "alice-password", false)
	f.register(t, "bob", "bob-password", false)

	if _, err := f.a.Login("alice", "wrong-password", testSource); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	// Even the right password is refused during the backoff.
	_, err := f.a.Login("alice", "alice-password", testSource)
	var te *ThrottledError
	if !errors.As(err, &te) || !errors.Is(err, ErrThrottled) || te.RetryAfter != DefaultLoginBackoff {
		t.Fatalf("login during backoff: %v, want ThrottledError of %v", err, DefaultLoginBackoff)
	}
	if err.Error() != "auth: too many failed logins; retry in 1s" {
		t.Fatalf("message %q", err)
	}
	f.login(t, "bob", "bob-password") // other clients are not affected

	f.clock.Advance(DefaultLoginBackoff)
	if _, err := f.a.Login("alice", "wrong-again", testSource); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("second wrong password: %v", err)
	}
	// The backoff doubled.
	f.clock.Advance(DefaultLoginBackoff)
	if _, err := f.a.Login("alice", "alice-password", testSource); !errors.As(err, &te) || te.RetryAfter != DefaultLoginBackoff {
		t.Fatalf("after the first backoff of the second failure: %v", err)
	}
	f.clock.Advance(DefaultLoginBackoff)
	f.login(t, "alice", "alice-password")

	// A success reset it.
	if _, err := f.a.Login("alice", "wrong", testSource); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatal(err)
	}
	if _, err := f.a.Login("alice", "x", testSource); !errors.As(err, &te) || te.RetryAfter != DefaultLoginBackoff {
		t.Fatalf("after a success the backoff should start over: %v", err)
	}
}

func TestLoginBackoffCapped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.LoginBackoff, c.MaxLoginBackoff = time.Second, 4*time.Second })
	f.register(t, "alice", "alice-password", false)
	var waits []time.Duration
	for range 5 {
		_, _ = f.a.Login("alice", "wrong-password", testSource)
		_, err := f.a.Login("alice", "wrong-password", testSource)
		var te *ThrottledError
		if !errors.As(err, &te) {
			t.Fatalf("not throttled: %v", err)
		}
		waits = append(waits, te.RetryAfter)
		f.clock.Advance(te.RetryAfter)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("backoffs %v, want %v", waits, want)
	}
	// A quiet period of twice the maximum forgets the failures.
	f.clock.Advance(8 * time.Second)
	_, _ = f.a.Login("alice", "wrong-password", testSource)
	_, err := f.a.Login("alice", "wrong-password", testSource)
	var te *ThrottledError
	if !errors.As(err, &te) || te.RetryAfter != time.Second {
		t.Fatalf("after a quiet period: %v", err)
	}
}

func TestLoginUnknownClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, id := range []string{"nobody", "", "bad id!", string(bytes.Repeat([]byte("x"), 200))} {
		if _, err := f.a.Login(id, "whatever-pass", testSource); !errors.Is(err, ErrInvalidCredentials) {
			t.Errorf("Login(%q) = %v, want ErrInvalidCredentials", id, err)
		}
	}
	// Unknown ids are throttled like known ones, so throttling tells
	// nothing about which ids exist.
	if _, err := f.a.Login("nobody", "whatever-pass", testSource); !errors.Is(err, ErrThrottled) {
		t.Fatalf("second attempt for an unknown id: %v", err)
	}
}

func TestThrottleTableBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.MaxThrottled = 4 })
	for i := range 50 {
		_, _ = f.a.Login(fmt.Sprintf("guess-%d", i), "whatever-pass", testSource)
	}
	f.a.throttle.mu.Lock()
	n := len(f.a.throttle.entries)
	f.a.throttle.mu.Unlock()
	if n > 4 {
		t.Fatalf("throttle table holds %d entries, limit 4", n)
	}
}

func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.SessionTTL, c.ExpiredRetention = time.Minute, time.Hour })
	f.register(t, "alice", "alice-password", false)
	s := f.login(t, "alice", "alice-password")
	if len(s.ID) != 43 || !s.Expires.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("session %+v", s)
	}
	p, err := f.a.Authenticate(s.ID)
	if err != nil || p.Client != "alice" || p.Role != RoleClient || p.Session != s.Handle {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	for id, want := range map[string]error{"": ErrNoSession, "forged": ErrUnknownSession, s.ID + "x": ErrUnknownSession} {
		if _, err := f.a.Authenticate(id); !errors.Is(err, want) {
			t.Errorf("Authenticate(%q) = %v, want %v", id, err, want)
		}
	}
	f.clock.Advance(time.Minute - time.Millisecond)
	if _, err := f.a.Authenticate(s.ID); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	f.clock.Advance(time.Millisecond)
	if _, err := f.a.Authenticate(s.ID); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("at expiry: %v", err)
	}
	if _, err := f.a.Refresh(s.ID); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("refresh of an expired session: %v", err)
	}
	// After the retention the session is forgotten (swept on a later
	// login).
	f.clock.Advance(time.Hour)
	f.login(t, "alice", "alice-password")
	if _, err := f.a.Authenticate(s.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("after the retention: %v", err)
	}
	if n := f.a.Sessions(); n != 1 {
		t.Fatalf("%d sessions remembered, want 1", n)
	}
}

func TestRefreshReplaces(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.register(t, "adm", "adm-password", true)
	s := f.login(t, "adm", "adm-password")
	f.clock.Advance(10 * time.Minute)
	r, err := f.a.Refresh(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID == s.ID || !r.Expires.Equal(epoch.Add(10*time.Minute+DefaultSessionTTL)) || r.Role != RoleAdmin {
		t.Fatalf("refreshed %+v from %+v", r, s)
	}
	if _, err := f.a.Authenticate(s.ID); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("old id after refresh: %v", err)
	}
	if _, err := f.a.Refresh(s.ID); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("second refresh of the old id: %v", err)
	}
	if p, err := f.a.Authenticate(r.ID); err != nil || !p.Admin() {
		t.Fatalf("new id: %+v, %v", p, err)
	}
}

func TestSessionsPerClientBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.MaxSessionsPerClient = 2 })
	f.register(t, "alice", "alice-password", false)
	s1 := f.login(t, "alice", "alice-password")
	s2 := f.login(t, "alice", "alice-password")
	s3 := f.login(t, "alice", "alice-password")
	if _, err := f.a.Authenticate(s1.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("oldest session: %v, want ended", err)
	}
	for _, s := range []Session{s2, s3} {
		if _, err := f.a.Authenticate(s.ID); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRegisterClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	cb := &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_HTTP, Endpoint: "http://127.0.0.1:9/hook"}
	c, secret, err := f.a.RegisterClient(ClientSpec{
		ID: "svc.orders-1", Password: "orders-password", Callback: cb,
		DefaultMode: storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR, DeadLetterMaxEntries: 10, DeadLetterRetention: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) != SigningSecretBytes || c.PasswordHash != nil || c.SigningSecret != nil ||
		c.DlqRetentionMs != 3600_000 || c.CreatedMs != epoch.UnixMilli() || c.GetCallback().GetEndpoint() != cb.Endpoint {
		t.Fatalf("registered %v, secret %d bytes", c, len(secret))
	}
	stored, err := f.st.Client("svc.orders-1")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored.SigningSecret, secret) || !bytes.HasPrefix(stored.PasswordHash, []byte("$argon2id$")) ||
		bytes.Contains(stored.PasswordHash, []byte("orders-password")) {
		t.Fatalf("stored record %v", stored)
	}
	if got, err := f.a.SigningSecrets("svc.orders-1"); err != nil || len(got) != 1 || !bytes.Equal(got[0].Key, secret) || !got[0].Until.IsZero() {
		t.Fatalf("SigningSecrets = %v, %v", got, err)
	}
	given := bytes.Repeat([]byte{7}, 20)
	if _, s, err := f.a.RegisterClient(ClientSpec{ID: "b", Password: "b-password", SigningSecret: given}); err != nil || !bytes.Equal(s, given) {
		t.Fatalf("given secret: %x, %v", s, err)
	}
	if _, _, err := f.a.RegisterClient(ClientSpec{ID: "b", Password: "b-password"}); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate: %v", err)
	}
	list := f.a.ListClients()
	if len(list) != 2 || list[0].Id != "b" || list[1].Id != "svc.orders-1" || list[0].SigningSecret != nil || list[0].PasswordHash != nil {
		t.Fatalf("ListClients = %v", list)
	}
	if _, err := f.a.Client("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Client(nope): %v", err)
	}
	cb.Endpoint = "http://changed.invalid/" // the registered record is the auth's own copy
	dcb, mode, err := f.a.Defaults("svc.orders-1")
	if err != nil || dcb.GetEndpoint() != "http://127.0.0.1:9/hook" || mode != storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR {
		t.Fatalf("Defaults = %v, %v, %v", dcb, mode, err)
	}
	if _, _, err := f.a.Defaults("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Defaults(nope): %v", err)
	}
	f.reopen(t)
	f.login(t, "svc.orders-1", "orders-password")
}

func TestRegisterClientValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, tc := range []struct {
		spec  ClientSpec
		field string
	}{
		{ClientSpec{ID: "", Password: "password"}, "client_id"},
		{ClientSpec{ID: "has space", Password: "password"}, "client_id"},
		{ClientSpec{ID: "ünï", Password: "password"}, "client_id"},
		{ClientSpec{ID: string(bytes.Repeat([]byte("a"), 129)), Password: "password"}, "client_id"},
		{ClientSpec{ID: "ok", Password: "1234567"}, "password"},
		{ClientSpec{ID: "ok", Password: string(bytes.Repeat([]byte("p"), 1025))}, "password"},
		{ClientSpec{ID: "ok", Password: "password", SigningSecret: []byte("short")}, "signing_secret"},
		{ClientSpec{ID: "ok", Password: "password", DeadLetterRetention: -time.Second}, "dead_letters.retention_ms"},
	} {
		_, _, err := f.a.RegisterClient(tc.spec)
		var fe *scheduler.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, scheduler.ErrInvalid) {
			t.Errorf("RegisterClient(%q, %d-byte password) = %v, want invalid %s", tc.spec.ID, len(tc.spec.Password), err, tc.field)
		}
	}
	if list := f.a.ListClients(); len(list) != 0 {
		t.Fatalf("invalid registrations stored: %v", list)
	}
}

func TestDeregisterClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.register(t, "admin", "admin-password", true)
	f.register(t, "alice", "alice-password", false)
	s := f.login(t, "alice", "alice-password")

	if err := f.a.DeregisterClient("admin"); !errors.Is(err, ErrLastAdmin) {
		t.Fatalf("deregister the last admin: %v", err)
	}
	b := f.st.NewBatch()
	for i := range 3 {
		b.PutTask(&storepb.Task{Id: store.MakeID(uint16(i), 1), Client: "alice", DueMs: 1})
	}
	if err := f.st.Commit(b); err != nil {
		t.Fatal(err)
	}
	err := f.a.DeregisterClient("alice")
	var ht *HasTasksError
	if !errors.As(err, &ht) || ht.Count != 3 || ht.More || err.Error() != `auth: client "alice" still has 3 tasks; cancel them first` {
		t.Fatalf("deregister with tasks: %v", err)
	}
	b = f.st.NewBatch()
	for i := range 3 {
		b.DeleteTask(&storepb.Task{Id: store.MakeID(uint16(i), 1), Client: "alice", DueMs: 1})
	}
	if err := f.st.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := f.a.DeregisterClient("alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Authenticate(s.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("session of a deregistered client: %v", err)
	}
	if _, err := f.a.Login("alice", "alice-password", testSource); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("login of a deregistered client: %v", err)
	}
	if err := f.a.DeregisterClient("alice"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deregister twice: %v", err)
	}
	f.reopen(t)
	if _, err := f.a.Client("alice"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after restart: %v", err)
	}
	// With a second admin, the first may go.
	f.register(t, "admin2", "admin2-password", true)
	if err := f.a.DeregisterClient("admin"); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentUse runs logins, lookups, refreshes and registrations at
// once, for the race detector, and checks every session still resolves to
// its own client.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			id := fmt.Sprintf("client-%d", w)
			if _, _, err := f.a.RegisterClient(ClientSpec{ID: id, Password: "password-" + id}); err != nil {
				errs <- err
				return
			}
			for range 20 {
				s, err := f.a.Login(id, "password-"+id, testSource)
				if err != nil {
					errs <- err
					return
				}
				if s, err = f.a.Refresh(s.ID); err != nil {
					errs <- err
					return
				}
				if p, err := f.a.Authenticate(s.ID); err != nil || p.Client != id {
					errs <- fmt.Errorf("session of %s resolves to %+v, %v", id, p, err)
					return
				}
				_ = f.a.ListClients()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
