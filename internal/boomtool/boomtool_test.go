package boomtool

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tool runs boomtool in-process with its config directory in dir and the
// given environment variables.
type tool struct {
	dir string
	env map[string]string
	now time.Time
}

func newTool(t *testing.T) *tool {
	return &tool{dir: t.TempDir(), env: map[string]string{}, now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
}

func (tl *tool) run(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	env := Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv:    func(k string) string { return tl.env[k] },
		ConfigDir: func() (string, error) { return tl.dir, nil },
		Now:       func() time.Time { return tl.now },
	}
	code = Main(args, env)
	return code, out.String(), errb.String()
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "5m": 5 * time.Minute, "1h30m": 90 * time.Minute,
		"2d": 48 * time.Hour, "1d12h": 36 * time.Hour, "0s": 0, "250ms": 250 * time.Millisecond,
	} {
		got, err := parseDuration(in)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "5", "d", "1x", "-d", "1d2"} {
		if _, err := parseDuration(bad); err == nil {
			t.Errorf("parseDuration(%q) succeeded", bad)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		90 * time.Second: "1m30s", 5 * time.Minute: "5m", time.Hour: "1h", 36 * time.Hour: "1d12h",
		24 * time.Hour: "1d", 25*time.Hour + 30*time.Second: "1d1h0m30s", 500 * time.Millisecond: "500ms", -90 * time.Second: "-1m30s",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
	now := time.Unix(1000, 0)
	if got := relative(now.Add(90*time.Second), now); got != "in 1m30s" {
		t.Errorf("relative future = %q", got)
	}
	if got := relative(now.Add(-5*time.Second), now); got != "5s ago" {
		t.Errorf("relative past = %q", got)
	}
	if got := every(300_000); got != "every 5m" {
		t.Errorf("every = %q", got)
	}
}

func TestPayloadPreview(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "(empty)",
		"invoice 42":               `"invoice 42"`,
		"\x00\x01\x02":             "3 bytes 0x000102",
		strings.Repeat("x", 50):    `"` + strings.Repeat("x", 40) + `"…`,
		"line\nbreak":              `"line\nbreak"`,
		string([]byte{0xff, 0xfe}): "2 bytes 0xfffe",
	} {
		if got := payloadPreview([]byte(in), 40); got != want {
			t.Errorf("payloadPreview(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCallback(t *testing.T) {
	for in, want := range map[string]*boomerangv1.Callback{
		"http://127.0.0.1:8080/hook":      {Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: "http://127.0.0.1:8080/hook"},
		"grpc://10.0.0.5:9000":            {Protocol: boomerangv1.Protocol_PROTOCOL_GRPC, Endpoint: "10.0.0.5:9000"},
		"tcp://h:1":                       {Protocol: boomerangv1.Protocol_PROTOCOL_TCP, Endpoint: "h:1"},
		"udp://h:2":                       {Protocol: boomerangv1.Protocol_PROTOCOL_UDP, Endpoint: "h:2"},
		"nats://h:4222/orders.{group}":    {Protocol: boomerangv1.Protocol_PROTOCOL_NATS, Endpoint: "nats://h:4222/orders.{group}"},
		"amqp://h/?routing_key=orders":    {Protocol: boomerangv1.Protocol_PROTOCOL_AMQP, Endpoint: "amqp://h/?routing_key=orders"},
		"activemq://h:61613/queue/orders": {Protocol: boomerangv1.Protocol_PROTOCOL_ACTIVEMQ, Endpoint: "activemq://h:61613/queue/orders"},
		"sqs://eu-west-1/orders.fifo":     {Protocol: boomerangv1.Protocol_PROTOCOL_SQS, Endpoint: "sqs://eu-west-1/orders.fifo"},
	} {
		got, err := parseCallback(in, 0, "")
		if err != nil || got.GetProtocol() != want.GetProtocol() || got.GetEndpoint() != want.GetEndpoint() {
			t.Errorf("parseCallback(%q) = %v, %v", in, got, err)
		}
		if back := callbackString(got); back != in {
			t.Errorf("callbackString(parseCallback(%q)) = %q", in, back)
		}
	}
	for _, bad := range []string{"ftp://h:1", "h:1", "http://"} {
		if _, err := parseCallback(bad, 0, ""); err == nil {
			t.Errorf("parseCallback(%q) succeeded", bad)
		}
	}
}

// Usage mistakes exit 2 with a message naming the problem; failures to
// reach the server exit 1 with a hint.
func TestUsageErrors(t *testing.T) {
	tl := newTool(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"show", "abc"}, 2, `bad task id "abc"`},
		{[]string{"show"}, 2, "want ID"},
		{[]string{"list", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"set", "x", "--delay", "soon"}, 2, `bad duration "soon"`},
		{[]string{"set", "x", "--at", "tomorrow"}, 2, "want RFC 3339"},
		{[]string{"set", "x", "--delay", "1s", "--at", "2026-12-01T10:00:00Z", "--client", "c", "--password", "p"}, 2, "not both"},
		{[]string{"set", "x", "--mode", "sometimes"}, 2, "bad mode"},
		{[]string{"update", "7", "--client", "c", "--password", "p"}, 2, "nothing to change"},
		{[]string{"list", "-o", "yaml"}, 2, "--output must be table or json"},
		{[]string{"list"}, 1, "not logged in"},
		{[]string{"list", "--client", "c"}, 2, `no password for client "c"`},
		{[]string{"list", "--password", "p"}, 2, "no client id"},
		{[]string{"login"}, 2, "log in with --client"},
		{[]string{"bench"}, 2, "give --client and --password"},
		{[]string{"client", "register", "x", "--backoff", "linear", "--client", "c", "--password", "p"}, 2, "bad --backoff"},
	} {
		code, _, stderr := tl.run("", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || !strings.HasPrefix(stderr, "boomtool: ") {
			t.Errorf("boomtool %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

func TestUnreachableServer(t *testing.T) {
	tl := newTool(t)
	tl.env[EnvClient], tl.env[EnvPassword] = "c", "password"
	code, _, stderr := tl.run("", "list", "--addr", "127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "cannot connect to 127.0.0.1:1") || !strings.Contains(stderr, "Is the server running?") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// The session file is private to the user, and an expired one is
// refused before any connection is tried.
func TestSessionFile(t *testing.T) {
	tl := newTool(t)
	a := &app{env: Env{ConfigDir: func() (string, error) { return tl.dir, nil }}}
	s := &savedSession{Addr: "127.0.0.1:1", Client: "c", SessionID: "abc", ExpiresAt: tl.now.Add(-time.Minute)}
	if err := a.saveSession(s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tl.dir, "boomerang", "session.json")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("session file mode %v, want 0600", st.Mode().Perm())
	}
	dst, _ := os.Stat(filepath.Dir(path))
	if dst.Mode().Perm() != 0o700 {
		t.Fatalf("session dir mode %v, want 0700", dst.Mode().Perm())
	}
	back, err := a.loadSession()
	if err != nil || *back != *s {
		t.Fatalf("loaded %+v, %v; want %+v", back, err, s)
	}
	code, _, stderr := tl.run("", "list")
	if code != 1 || !strings.Contains(stderr, "the saved session has expired") {
		t.Fatalf("expired session: exit %d, %q", code, stderr)
	}
	code, _, stderr = tl.run("", "list", "--addr", "127.0.0.1:2")
	if code != 1 || !strings.Contains(stderr, "the saved session is for 127.0.0.1:1, not 127.0.0.1:2") {
		t.Fatalf("session for another server: exit %d, %q", code, stderr)
	}
	code, stdout, _ := tl.run("", "logout")
	if code != 0 || !strings.Contains(stdout, "Logged out") {
		t.Fatalf("logout: exit %d, %q", code, stdout)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("session file still there after logout: %v", err)
	}
	if err := os.WriteFile(path, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = tl.run("", "list")
	if code != 1 || !strings.Contains(stderr, "is damaged") {
		t.Fatalf("damaged session file: exit %d, %q", code, stderr)
	}
}

func TestCompletion(t *testing.T) {
	tl := newTool(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, stdout, stderr := tl.run("", "completion", shell)
		if code != 0 || !strings.Contains(stdout, "boomtool") {
			t.Errorf("completion %s: exit %d, stderr %q", shell, code, stderr)
		}
	}
	code, stdout, _ := tl.run("", "__complete", "set", "--mode", "")
	if code != 0 || !strings.Contains(stdout, "block-on-error") {
		t.Errorf("completing --mode: exit %d, %q", code, stdout)
	}
}
