package auth

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/auth/authpb"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// No file of the store holds a signing secret or a password in the clear.
func TestSecretsSealedAtRest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	secret := []byte("a-recognizable-signing-secret")
	if _, _, err := f.a.RegisterClient(ClientSpec{ID: "alice", Password: "alice-recognizable-password", SigningSecret: secret}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.a.RotateSigningSecret("alice", []byte("another-recognizable-secret"), time.Hour); err != nil {
		t.Fatal(err)
	}
	f.close(t)
	err := filepath.WalkDir(f.dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range []string{string(secret), "another-recognizable-secret", "alice-recognizable-password"} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %q in the clear", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A new first key seals every record again at start; the old key can then
// go. A key that sealed nothing it is given opens nothing.
func TestSecretKeyRotation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	if _, _, err := f.a.RegisterClient(ClientSpec{ID: "alice", Password: "alice-password", SigningSecret: []byte("alice-signing-secret")}); err != nil {
		t.Fatal(err)
	}
	oldKey, newKey := f.keys[0], GenerateKey()
	f.keys = [][]byte{newKey, oldKey}
	f.reopen(t)
	if got := storedKeyID(t, f.st, "alice"); !bytes.Equal(got, KeyID(newKey)) {
		t.Fatalf("record sealed with key %x, want the new key %x", got, KeyID(newKey))
	}
	f.keys = [][]byte{newKey}
	f.reopen(t)
	if s, err := f.a.SigningSecrets("alice"); err != nil || string(s[0].Key) != "alice-signing-secret" {
		t.Fatalf("after dropping the old key: %v, %v", s, err)
	}
	f.close(t)
	st, err := store.Open(f.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := New(st, Config{Hash: lightHash, SecretKeys: [][]byte{GenerateKey()}}); !errors.Is(err, ErrNoKey) {
		t.Fatalf("opening with a key that sealed nothing: %v, want ErrNoKey", err)
	}
}

// Records written with the signing secret in the clear are read, then
// sealed.
func TestPlainSecretsSealedOnOpen(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	b := f.st.NewBatch()
	b.PutClient(&storepb.Client{Id: "old", PasswordHash: hashPassword("old-password", lightHash), Admin: true, SigningSecret: []byte("plain-old-secret")})
	if err := f.st.Commit(b); err != nil {
		t.Fatal(err)
	}
	f.reopen(t)
	if s, err := f.a.SigningSecrets("old"); err != nil || string(s[0].Key) != "plain-old-secret" {
		t.Fatalf("SigningSecrets = %v, %v", s, err)
	}
	if c, err := f.a.Client("old"); err != nil || c.Role != RoleAdmin {
		t.Fatalf("Client = %+v, %v", c, err)
	}
	stored, err := f.st.Client("old")
	if err != nil || bytes.Contains(stored.SigningSecret, []byte("plain-old-secret")) || !stored.Admin {
		t.Fatalf("stored %v, %v: want sealed", stored, err)
	}
}

func storedKeyID(t *testing.T, st *store.Store, id string) []byte {
	t.Helper()
	rec, err := st.Client(id)
	if err != nil {
		t.Fatal(err)
	}
	var ext authpb.Extension
	raw, ok := bytes.CutPrefix(rec.SigningSecret, extensionMagic)
	if !ok || proto.Unmarshal(raw, &ext) != nil {
		t.Fatalf("record %q holds no extension", id)
	}
	return ext.KeyId
}

// Attempts for one client from one source run one at a time: while one
// is under way the next waits, and is throttled if the first failed.
func TestOneAttemptAtATimePerSource(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.register(t, "alice", "alice-password", false)
	key := throttleKey("alice", testSource)
	if wait := f.a.throttle.begin(key, f.clock.Now); wait != 0 { // an attempt under way
		t.Fatalf("first attempt waits %v", wait)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.a.Login("alice", "alice-password", testSource)
		done <- err
	}()
	if _, err := f.a.Login("alice", "alice-password", "192.0.2.77:1"); err != nil {
		t.Fatalf("another source meanwhile: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("an attempt beside one under way went ahead: %v", err)
	default:
	}
	f.a.throttle.fail(key, f.clock.Now()) // the attempt under way fails
	f.a.throttle.end(key)
	if err := <-done; !errors.Is(err, ErrThrottled) {
		t.Fatalf("the waiting attempt after a failure: %v, want throttled", err)
	}
}

// Wrong passwords from one source never refuse the right password from
// another.
func TestThrottleIsPerSource(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.register(t, "alice", "alice-password", false)
	const attacker, owner = "198.51.100.7:1234", "192.0.2.10:5555"
	for range 20 {
		_, _ = f.a.Login("alice", "guess-password", attacker)
		f.clock.Advance(time.Millisecond)
	}
	if _, err := f.a.Login("alice", "alice-password", attacker); !errors.Is(err, ErrThrottled) {
		t.Fatalf("the guessing source: %v, want throttled", err)
	}
	if _, err := f.a.Login("alice", "alice-password", owner); err != nil {
		t.Fatalf("the owner's source: %v", err)
	}
	// One IPv6 host holds a /64: its addresses share one throttle.
	_, _ = f.a.Login("alice", "guess-password", "[2001:db8:1:2::1]:1")
	if _, err := f.a.Login("alice", "alice-password", "[2001:db8:1:2::ffff]:2"); !errors.Is(err, ErrThrottled) {
		t.Fatalf("same /64: %v, want throttled", err)
	}
	if _, err := f.a.Login("alice", "alice-password", "[2001:db8:1:3::1]:2"); err != nil {
		t.Fatalf("another /64: %v", err)
	}
}

// A source beyond its share of attempts, and logins beyond the hashing
// budget, are refused without hashing.
func TestLoginBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.LoginsPerSource = 1 })
	f.register(t, "alice", "alice-password", false)
	for i := range loginBurstSeconds {
		if _, err := f.a.Login("alice", "alice-password", "192.0.2.1:1"); err != nil {
			t.Fatalf("attempt %d within the burst: %v", i, err)
		}
	}
	if _, err := f.a.Login("alice", "alice-password", "192.0.2.1:1"); !errors.Is(err, ErrLoginBusy) {
		t.Fatalf("beyond the source's burst: %v, want ErrLoginBusy", err)
	}
	if _, err := f.a.Login("alice", "alice-password", "192.0.2.2:1"); err != nil {
		t.Fatalf("another source: %v", err)
	}
	f.clock.Advance(time.Second)
	if _, err := f.a.Login("alice", "alice-password", "192.0.2.1:1"); err != nil {
		t.Fatalf("a second later: %v", err)
	}

	g := newFixture(t, func(c *Config) { c.LoginChecksPerSecond, c.MaxLoginWait = 1, -1 })
	g.register(t, "bob", "bob-password", false)
	for i := range loginBurstSeconds {
		if _, err := g.a.Login("bob", "bob-password", fmt.Sprintf("192.0.2.%d:1", i)); err != nil {
			t.Fatalf("check %d within the burst: %v", i, err)
		}
	}
	if _, err := g.a.Login("bob", "bob-password", "192.0.2.99:1"); !errors.Is(err, ErrLoginBusy) {
		t.Fatalf("beyond the server's checks: %v, want ErrLoginBusy", err)
	}
	g.clock.Advance(time.Second)
	if _, err := g.a.Login("bob", "bob-password", "192.0.2.99:1"); err != nil {
		t.Fatalf("a second later: %v", err)
	}
}

// An unknown client's login waits as long as a verification takes, without
// running one.
func TestUnknownClientCostsNoHash(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.register(t, "alice", "alice-password", false)
	var paused []time.Duration
	f.a.pause = func(d time.Duration) { paused = append(paused, d) }
	f.a.budget.estimate.Store(int64(40 * time.Millisecond))
	if _, err := f.a.Login("nobody", "some-password", testSource); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatal(err)
	}
	if len(paused) != 1 || paused[0] != 40*time.Millisecond {
		t.Fatalf("unknown client paused %v, want one pause of the estimate", paused)
	}
	if _, err := f.a.Login("alice", "wrong-password", "192.0.2.99:1"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatal(err)
	}
	if len(paused) != 1 {
		t.Fatalf("a known client paused instead of hashing: %v", paused)
	}
	if est := f.a.budget.cost(); est >= 40*time.Millisecond {
		t.Fatalf("the estimate did not follow the measured hash: %v", est)
	}
}

func TestLogoutAndSessionAdmin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.register(t, "alice", "alice-password", false)
	f.register(t, "bob", "bob-password", false)
	a1 := f.login(t, "alice", "alice-password")
	a2 := f.login(t, "alice", "alice-password")
	b1 := f.login(t, "bob", "bob-password")

	list := f.a.ListSessions("")
	if len(list) != 3 || list[0].Client != "alice" || list[2].Client != "bob" || list[0].Source != testSource || len(list[0].Handle) != 16 {
		t.Fatalf("ListSessions = %+v", list)
	}
	if strings.Contains(list[0].Handle, a1.ID[:8]) {
		t.Fatal("a handle shows the session id")
	}
	if err := f.a.Logout(a1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Authenticate(a1.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("after logout: %v", err)
	}
	if err := f.a.Logout(a1.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("logout twice: %v", err)
	}
	if n, err := f.a.RevokeSessions("alice", "not-a-handle"); err != nil || n != 0 {
		t.Fatalf("revoked %d with an unknown handle: %v", n, err)
	}
	if n, err := f.a.RevokeSessions("alice", a2.Handle); err != nil || n != 1 {
		t.Fatalf("revoked %d by handle, want 1: %v", n, err)
	}
	if _, err := f.a.Authenticate(a2.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("after revoke: %v", err)
	}
	f.login(t, "bob", "bob-password")
	if n, err := f.a.RevokeSessions("bob", ""); err != nil || n != 2 {
		t.Fatalf("revoked %d of bob's, want 2: %v", n, err)
	}
	if _, err := f.a.Authenticate(b1.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("bob's session after revoking all: %v", err)
	}
	if list := f.a.ListSessions(""); len(list) != 0 {
		t.Fatalf("sessions left: %+v", list)
	}
}

func TestUpdateClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.register(t, "root", "root-password", true)
	f.register(t, "alice", "alice-password", false)
	s := f.login(t, "alice", "alice-password")
	mode := storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE
	cb := &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_TCP, Endpoint: "10.0.0.1:9000"}
	c, err := f.a.UpdateClient("alice", ClientUpdate{SetCallback: true, Callback: cb, DefaultMode: &mode,
		SetRules: true, CallbackAllow: []string{"10.0.0.0/8"}})
	if err != nil || c.GetCallback().GetEndpoint() != "10.0.0.1:9000" || c.DefaultMode != mode || len(c.CallbackAllow) != 1 {
		t.Fatalf("UpdateClient = %+v, %v", c, err)
	}
	if _, err := f.a.Authenticate(s.ID); err != nil {
		t.Fatalf("a settings change ended the session: %v", err)
	}
	if err := f.a.CallbackRules("alice").CheckEndpoint("192.0.2.1"); err == nil {
		t.Fatal("the client's rules do not apply")
	}
	c, err = f.a.UpdateClient("alice", ClientUpdate{Role: RoleReadOnly, SetCallback: true})
	if err != nil || c.Role != RoleReadOnly || c.Callback != nil {
		t.Fatalf("UpdateClient role = %+v, %v", c, err)
	}
	if _, err := f.a.Authenticate(s.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("a role change kept the session: %v", err)
	}
	if s := f.login(t, "alice", "alice-password"); s.Role != RoleReadOnly {
		t.Fatalf("new session role %v", s.Role)
	}
	if _, err := f.a.UpdateClient("root", ClientUpdate{Role: RoleClient}); !errors.Is(err, ErrLastAdmin) {
		t.Fatalf("demoting the last admin: %v", err)
	}
	var fe *scheduler.FieldError
	if _, err := f.a.UpdateClient("alice", ClientUpdate{SetRules: true, CallbackDeny: []string{"not a rule"}}); !errors.As(err, &fe) || fe.Field != "callback_rules.deny" {
		t.Fatalf("bad rule: %v", err)
	}
	if _, err := f.a.UpdateClient("nobody", ClientUpdate{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown client: %v", err)
	}
	f.reopen(t)
	if c, err := f.a.Client("alice"); err != nil || c.Role != RoleReadOnly || len(c.CallbackAllow) != 1 {
		t.Fatalf("after restart: %+v, %v", c, err)
	}
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.register(t, "alice", "alice-password", false)
	keep := f.login(t, "alice", "alice-password")
	other := f.login(t, "alice", "alice-password")
	if err := f.a.ChangePassword("alice", "wrong-password", "new-password", testSource, keep.Handle); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("wrong current password: %v", err)
	}
	f.clock.Advance(time.Minute)
	if err := f.a.ChangePassword("alice", "alice-password", "short", testSource, keep.Handle); err == nil {
		t.Fatal("a short new password was accepted")
	}
	if err := f.a.ChangePassword("alice", "alice-password", "new-password", testSource, keep.Handle); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Authenticate(keep.ID); err != nil {
		t.Fatalf("the kept session: %v", err)
	}
	if _, err := f.a.Authenticate(other.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("another session: %v", err)
	}
	if _, err := f.a.Login("alice", "alice-password", "192.0.2.50:1"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("the old password: %v", err)
	}
	// An admin sets it without the current one.
	if err := f.a.ChangePassword("alice", "", "admin-set-password", "", ""); err != nil {
		t.Fatal(err)
	}
	f.login(t, "alice", "admin-set-password")
	if !f.a.CheckPassword("alice", "admin-set-password") || f.a.CheckPassword("alice", "new-password") || f.a.CheckPassword("nobody", "x") {
		t.Fatal("CheckPassword disagrees")
	}
}

func TestRotateSigningSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	if _, _, err := f.a.RegisterClient(ClientSpec{ID: "alice", Password: "alice-password", SigningSecret: []byte("first-signing-secret")}); err != nil {
		t.Fatal(err)
	}
	c, secret, err := f.a.RotateSigningSecret("alice", nil, time.Hour)
	if err != nil || len(secret) != SigningSecretBytes || !c.PreviousSecretUntil.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("rotate: %+v, %d bytes, %v", c, len(secret), err)
	}
	got, _ := f.a.SigningSecrets("alice")
	if len(got) != 2 || !bytes.Equal(got[0].Key, secret) || string(got[1].Key) != "first-signing-secret" || !got[1].Until.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("during the overlap: %+v", got)
	}
	f.reopen(t)
	f.clock.Advance(time.Hour)
	if got, _ := f.a.SigningSecrets("alice"); len(got) != 1 || !bytes.Equal(got[0].Key, secret) {
		t.Fatalf("after the overlap: %+v", got)
	}
	if c, _ := f.a.Client("alice"); !c.PreviousSecretUntil.IsZero() {
		t.Fatalf("previous secret still reported: %v", c.PreviousSecretUntil)
	}
	_, next, err := f.a.RotateSigningSecret("alice", []byte("third-signing-secret"), 0)
	if err != nil || string(next) != "third-signing-secret" {
		t.Fatal(err)
	}
	if got, _ := f.a.SigningSecrets("alice"); len(got) != 1 {
		t.Fatalf("no overlap asked, got %+v", got)
	}
	for _, o := range []time.Duration{-time.Second, MaxSecretOverlap + time.Second} {
		if _, _, err := f.a.RotateSigningSecret("alice", nil, o); !errors.Is(err, scheduler.ErrInvalid) {
			t.Errorf("overlap %v: %v", o, err)
		}
	}
}

func TestReadOnlyRole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	if _, _, err := f.a.RegisterClient(ClientSpec{ID: "ops", Password: "ops-password", Role: RoleReadOnly}); err != nil {
		t.Fatal(err)
	}
	f.reopen(t)
	s := f.login(t, "ops", "ops-password")
	p, err := f.a.Authenticate(s.ID)
	if err != nil || !p.ReadOnly() || !p.SeesAll() || p.Admin() {
		t.Fatalf("principal %+v, %v", p, err)
	}
}

// A client id with a character outside the alphabet is named clearly,
// whatever the character.
func TestClientIDMessages(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"ünï":      `found 'ü' (U+00FC) at byte 0`,
		"a\xc3":    "found the byte 0xc3 (not UTF-8) at byte 1",
		"a\x1b[2J": "found the control character U+001B at byte 1",
		"a b":      `found ' ' (U+0020) at byte 1`,
	} {
		err := validID(id)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validID(%q) = %v, want it to say %s", id, err, want)
		}
	}
}
