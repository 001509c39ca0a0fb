package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/delivery/webhook"
)

// Knowing the admin's id and guessing its password from one address
// never refuses the right password from another.
func TestGuessingDoesNotLockOut(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	nc := dialFrom(t, "127.0.0.2", s.tcp)
	_ = nc.SetDeadline(time.Now().Add(waitLimit))
	attacker := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
	const guesses = 200
	var frames []byte
	for i := range guesses {
		frames, _ = appendFrame(frames, &boomerangv1.Request{RequestId: uint64(i + 1), Body: &boomerangv1.Request_Login{
			Login: &boomerangv1.LoginRequest{ClientId: "admin", Password: fmt.Sprintf("guess-%d", i)}}})
	}
	attacker.write(frames)
	if resp := attacker.read(); resp.GetLogin() != nil {
		t.Fatalf("a guess logged in: %v", resp)
	}
	for i := range 20 {
		r := dialRaw(t, s.tcp)
		r.send(loginRequest("admin", adminPassword))
		if resp := r.read(); resp.GetLogin().GetSessionId() == "" {
			t.Fatalf("right password, attempt %d, while another address guesses: %v", i, resp)
		}
	}
	for range guesses - 1 {
		if resp := attacker.read(); resp.GetLogin() != nil {
			t.Fatalf("a guess logged in: %v", resp)
		}
	}
}

func loginRequest(id, password string) *boomerangv1.Request {
	return &boomerangv1.Request{RequestId: 1, Body: &boomerangv1.Request_Login{Login: &boomerangv1.LoginRequest{ClientId: id, Password: password}}}
}

// requestWith sends GetServerInfo with session and returns the status.
func requestWith(t *testing.T, addr, session string) boomerangv1.Status {
	t.Helper()
	r := dialRaw(t, addr)
	r.send(&boomerangv1.Request{RequestId: 1, SessionId: session, Body: &boomerangv1.Request_GetServerInfo{GetServerInfo: &boomerangv1.GetServerInfoRequest{}}})
	resp := r.read()
	if resp.GetError() == nil {
		return boomerangv1.Status_STATUS_OK
	}
	return resp.GetError().GetStatus()
}

// "boomtool logout" ends the session on the server, not only the file.
func TestLogoutEndsTheSession(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := newCLI(t, s.tcp)
	c.ok("login", "--client", "admin", "--password", adminPassword)
	b, err := os.ReadFile(filepath.Join(c.home, ".config", "boomerang", "session.json"))
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	if st := requestWith(t, s.tcp, saved.SessionID); st != boomerangv1.Status_STATUS_OK {
		t.Fatalf("the saved session before logout: %v", st)
	}
	if out := c.ok("logout"); !strings.Contains(out, "ended on the server") {
		t.Fatalf("logout printed %q", out)
	}
	if st := requestWith(t, s.tcp, saved.SessionID); st != boomerangv1.Status_STATUS_UNAUTHORIZED {
		t.Fatalf("the saved session after logout: %v, want UNAUTHORIZED", st)
	}
}

// An admin lists sessions by handle and revokes them; a client sees only
// its own.
func TestSessionAdministration(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	registerClient(t, s.admin(t), "erin", "http://127.0.0.1:1/unused", 0)
	r := dialRaw(t, s.tcp)
	erinSession := r.login("erin", "erin-password")
	second := dialRaw(t, s.tcp).login("erin", "erin-password")

	admin := newCLI(t, s.tcp)
	admin.ok("login", "--client", "admin", "--password", adminPassword)
	list := admin.json("session", "list", "--of", "erin")
	sessions := list["sessions"].([]any)
	if len(sessions) != 2 {
		t.Fatalf("session list --of erin: %v", list)
	}
	out := admin.ok("session", "list")
	for _, want := range []string{"HANDLE", "erin", "admin", "127.0.0.1", "(this one)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("session list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, erinSession) {
		t.Fatal("session list shows a session id")
	}
	handle := sessions[0].(map[string]any)["handle"].(string)
	if out := admin.ok("session", "revoke", handle, "--of", "erin"); !strings.Contains(out, "Revoked 1 session.") {
		t.Fatalf("revoke printed %q", out)
	}
	statuses := []boomerangv1.Status{requestWith(t, s.tcp, erinSession), requestWith(t, s.tcp, second)}
	if (statuses[0] == boomerangv1.Status_STATUS_OK) == (statuses[1] == boomerangv1.Status_STATUS_OK) {
		t.Fatalf("after revoking one of two sessions: %v", statuses)
	}
	admin.ok("session", "revoke", "--all", "--of", "erin")
	for _, id := range []string{erinSession, second} {
		if st := requestWith(t, s.tcp, id); st != boomerangv1.Status_STATUS_UNAUTHORIZED {
			t.Fatalf("after revoking all: %v", st)
		}
	}
	erin := newCLI(t, s.tcp)
	erin.env = append(erin.env, "BOOMERANG_CLIENT=erin", "BOOMERANG_PASSWORD=erin-password")
	erin.fails(1, "only an admin may name another client", "session", "list", "--of", "admin")
	for _, sess := range erin.json("session", "list")["sessions"].([]any) {
		if c := sess.(map[string]any)["client"]; c != "erin" {
			t.Fatalf("erin sees a session of %v", c)
		}
	}
}

// signedReceiver answers 204 and reports each webhook's signature header.
func signedReceiver(t *testing.T) (string, <-chan http.Header) {
	t.Helper()
	got := make(chan http.Header, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", got
}

func nextHeader(t *testing.T, got <-chan http.Header) http.Header {
	t.Helper()
	select {
	case h := <-got:
		return h
	case <-time.After(waitLimit):
		t.Fatal("no webhook arrived")
		return nil
	}
}

// verifies reports whether a webhook's signature verifies with secret.
func verifies(h http.Header, body, secret string) bool {
	ts := h.Get(webhook.HeaderTimestamp)
	var sec int64
	_, _ = fmt.Sscan(ts, &sec)
	_, err := webhook.Verify([]byte(secret), h, []byte(body), time.Unix(sec, 0), 0)
	return err == nil
}

// A client's settings change, its password changes, and its signing
// secret rotates with both secrets signing during the overlap.
func TestClientAdministrationCLI(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	hook, got := signedReceiver(t)
	admin := newCLI(t, s.tcp)
	admin.ok("login", "--client", "admin", "--password", adminPassword)
	out := admin.ok("client", "register", "erin", "--new-password", "erin-password", "--callback", hook,
		"--signing-secret", "first-signing-secret")
	if !strings.Contains(out, "Signing secret: first-signing-secret   (text; shown only now)") {
		t.Fatalf("register printed %q", out)
	}
	out = admin.ok("client", "update", "erin", "--mode", "block-on-error", "--max-attempts", "3", "--group-limit", "5")
	if !strings.Contains(out, "block-on-error") || !strings.Contains(out, "3 attempts") || !strings.Contains(out, "5 tasks") {
		t.Fatalf("update printed %q", out)
	}
	if shown := admin.json("client", "show", "erin")["client"].(map[string]any); shown["defaultMode"] != "DISPATCH_MODE_BLOCK_ON_ERROR" || shown["role"] != "ROLE_CLIENT" {
		t.Fatalf("client show -o json = %v", shown)
	}
	admin.fails(2, "nothing to change", "client", "update", "erin")

	erin := newCLI(t, s.tcp)
	erin.ok("login", "--client", "erin", "--password", "erin-password")
	if out := erin.ok("client", "show"); !strings.Contains(out, "ID:") || !strings.Contains(out, "erin") {
		t.Fatalf("client show as erin: %q", out)
	}
	erin.fails(1, "unauthorized", "client", "show", "admin")
	erin.ok("client", "passwd", "--current-password", "erin-password", "--new-password", "erin-new-password")
	erin.ok("info", "--client", "erin", "--password", "erin-new-password")

	// Rotation: during the overlap each webhook verifies with either secret.
	out = erin.ok("client", "rotate-secret", "--signing-secret", "second-signing-secret", "--overlap", "1h")
	if !strings.Contains(out, "still signs until") {
		t.Fatalf("rotate-secret printed %q", out)
	}
	erin.ok("set", "during", "--client", "erin", "--password", "erin-new-password")
	h := nextHeader(t, got)
	if !verifies(h, "during", "first-signing-secret") || !verifies(h, "during", "second-signing-secret") {
		t.Fatalf("during the overlap: signature %q", h.Get(webhook.HeaderSignature))
	}
	admin.ok("client", "rotate-secret", "erin", "--signing-secret", "third-signing-secret", "--overlap", "0s")
	erin.ok("set", "after", "--client", "erin", "--password", "erin-new-password")
	h = nextHeader(t, got)
	if !verifies(h, "after", "third-signing-secret") || verifies(h, "after", "second-signing-secret") {
		t.Fatalf("without overlap: signature %q", h.Get(webhook.HeaderSignature))
	}
	// An admin sets a password without the current one. Failed logins
	// slow down the next ones from this address, so they come last.
	admin.ok("client", "passwd", "erin", "--new-password", "erin-third-password")
	erin.ok("info", "--client", "erin", "--password", "erin-third-password")
	erin.fails(1, "invalid client id or password", "info", "--client", "erin", "--password", "erin-password")
	waitFor(t, "the failed login's backoff to pass", func() bool {
		code, _, errOut := erin.run("", "client", "passwd", "--current-password", "wrong-password",
			"--new-password", "erin-fourth-password", "--client", "erin", "--password", "erin-third-password")
		return code == 1 && strings.Contains(errOut, "invalid client id or password")
	})
}

// A read-only client sees every client's tasks, groups, dead letters and
// clients, and changes nothing.
func TestReadOnlyRole(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	admin := newCLI(t, s.tcp)
	admin.ok("login", "--client", "admin", "--password", adminPassword)
	admin.ok("client", "register", "erin", "--new-password", "erin-password", "--callback", "http://127.0.0.1:1/hook")
	out := admin.ok("client", "register", "ops", "--new-password", "ops-password", "--role", "read-only")
	if !strings.Contains(out, "Role:           read-only") {
		t.Fatalf("register printed %q", out)
	}
	erin := newCLI(t, s.tcp)
	erin.env = append(erin.env, "BOOMERANG_CLIENT=erin", "BOOMERANG_PASSWORD=erin-password")
	id := erin.json("set", "erin's task", "--delay", "1h", "--group", "g1")["task"].(map[string]any)["id"].(string)

	ops := newCLI(t, s.tcp)
	if out := ops.ok("login", "--client", "ops", "--password", "ops-password"); !strings.Contains(out, "(read-only)") {
		t.Fatalf("login printed %q", out)
	}
	for _, args := range [][]string{{"list"}, {"show", id}, {"client", "list"}, {"client", "show", "erin"}, {"group", "show", "g1", "--of", "erin"}, {"dlq", "list"}, {"session", "list"}} {
		out := ops.ok(args...)
		if args[0] == "list" && !strings.Contains(out, "erin's task") {
			t.Fatalf("ops list:\n%s", out)
		}
	}
	for _, args := range [][]string{
		{"set", "x"}, {"delete", id}, {"update", id, "--delay", "1m"}, {"group", "skip", "g1", "--of", "erin"},
		{"dlq", "delete", "1"}, {"client", "passwd", "--new-password", "another-password"},
	} {
		ops.fails(1, "read-only client may not change anything", args...)
	}
	ops.fails(1, "only an admin may do this", "client", "register", "x")
	ops.fails(1, "only an admin may do this", "client", "update", "erin", "--mode", "immediate")
}
