package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/goleak"

	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// parse runs the serve flags over args, env and a config file with the
// given YAML ("" for none).
func parse(t *testing.T, args []string, env map[string]string, yaml string) (*options, error) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	o := newOptions()
	o.register(fs)
	if yaml != "" {
		path := filepath.Join(t.TempDir(), "boomerang.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return o, o.complete(fs, lookup)
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	o, err := parse(t, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.DataDir != "./boomerang-data" || c.TCPAddr != "127.0.0.1:7070" || c.HTTPAddr != "127.0.0.1:7071" ||
		c.MaxPayloadBytes != 1<<20 || c.AdminID != "admin" || c.AdminPassword != "" || c.SessionTTL != time.Hour ||
		c.Pools != nil || o.shutdownTimeout != 30*time.Second || o.logLevel != "info" {
		t.Fatalf("defaults: %+v %+v", c, o)
	}
}

// TestPrecedence checks flags > environment > config file > defaults, for
// each layer alone and together.
func TestPrecedence(t *testing.T) {
	t.Parallel()
	yaml := `
tcp-addr: 127.0.0.1:1001
http-addr: 127.0.0.1:2001
data-dir: /from/file
session-ttl: 10m
admin-password: file-password
pool: ["web=8,100", "slow=2"]
`
	env := map[string]string{
		"BOOMERANG_TCP_ADDR":       "127.0.0.1:1002",
		"BOOMERANG_HTTP_ADDR":      "127.0.0.1:2002",
		"BOOMERANG_ADMIN_PASSWORD": "env-password",
		"BOOMERANG_MAX_IN_FLIGHT":  "7",
	}
	o, err := parse(t, []string{"--tcp-addr", "127.0.0.1:1003"}, env, yaml)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	switch {
	case c.TCPAddr != "127.0.0.1:1003":
		t.Errorf("tcp-addr %q: the flag should win", c.TCPAddr)
	case c.HTTPAddr != "127.0.0.1:2002" || c.AdminPassword != "env-password" || c.MaxInFlight != 7:
		t.Errorf("environment should win over the file: %+v", c)
	case c.DataDir != "/from/file" || c.SessionTTL != 10*time.Minute:
		t.Errorf("file should win over the defaults: %+v", c)
	case c.MaxConnections != server.DefaultMaxConnections:
		t.Errorf("untouched setting %d", c.MaxConnections)
	}
	want := map[string]delivery.PoolConfig{"web": {MaxConcurrent: 8, MaxPerSecond: 100}, "slow": {MaxConcurrent: 2}}
	if len(c.Pools) != 2 || c.Pools["web"] != want["web"] || c.Pools["slow"] != want["slow"] {
		t.Errorf("pools from the file: %v", c.Pools)
	}

	// The environment replaces the file's pools; flags replace both.
	o, err = parse(t, nil, map[string]string{"BOOMERANG_POOL": "a=1,2; b=3"}, yaml)
	if err != nil || len(o.cfg.Pools) != 2 || o.cfg.Pools["a"].MaxPerSecond != 2 || o.cfg.Pools["b"].MaxConcurrent != 3 {
		t.Errorf("pools from the environment: %v, %v", o.cfg.Pools, err)
	}
	o, err = parse(t, []string{"--pool", "x=4", "--pool", "y=5,0.5"}, map[string]string{"BOOMERANG_POOL": "a=1"}, yaml)
	if err != nil || len(o.cfg.Pools) != 2 || o.cfg.Pools["y"].MaxPerSecond != 0.5 {
		t.Errorf("pools from flags: %v, %v", o.cfg.Pools, err)
	}

	// The config file itself can come from the environment.
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("data-dir: /via/env\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err = parse(t, nil, map[string]string{"BOOMERANG_CONFIG": path}, "")
	if err != nil || o.cfg.DataDir != "/via/env" {
		t.Errorf("BOOMERANG_CONFIG: %q, %v", o.cfg.DataDir, err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		yaml string
		want string
	}{
		"unknown key":     {yaml: "tcp_addr: x\n", want: `unknown setting "tcp_addr"`},
		"bad duration":    {yaml: "idle-timeout: soon\n", want: "idle-timeout"},
		"nested":          {yaml: "pool:\n  web: 3\n", want: "plain value or a list"},
		"list for scalar": {yaml: "tcp-addr: [a, b]\n", want: "takes one value"},
		"bad yaml":        {yaml: "tcp-addr: [\n", want: "config file"},
		"bad env":         {env: map[string]string{"BOOMERANG_MAX_IN_FLIGHT": "many"}, want: "BOOMERANG_MAX_IN_FLIGHT"},
		"bad pool":        {args: []string{"--pool", "web"}, want: "name=maxConcurrent"},
		"bad pool rate":   {args: []string{"--pool", "web=1,-1"}, want: "maxPerSecond"},
		"log level":       {args: []string{"--log-level", "loud"}, want: "--log-level"},
		"missing file":    {args: []string{"--config", "/nonexistent/boomerang.yaml"}, want: "config file"},
	} {
		_, err := parse(t, tc.args, tc.env, tc.yaml)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", name, err, tc.want)
		}
	}
}

func TestEnvNames(t *testing.T) {
	t.Parallel()
	for flag, env := range map[string]string{"tcp-addr": "BOOMERANG_TCP_ADDR", "admin-password": "BOOMERANG_ADMIN_PASSWORD", "pool": "BOOMERANG_POOL"} {
		if got := envName(flag); got != env {
			t.Errorf("envName(%q) = %q, want %q", flag, got, env)
		}
	}
}

func TestSecurityFlags(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("ab", 32)
	o, err := parse(t, nil, map[string]string{"BOOMERANG_SECRET_KEY": key + "," + strings.Repeat("cd", 32)}, "")
	if err != nil || len(o.cfg.SecretKeys) != 2 || o.cfg.SecretKeys[0][0] != 0xab {
		t.Fatalf("BOOMERANG_SECRET_KEY: %v, %v", o.cfg.SecretKeys, err)
	}
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte("# comment\n"+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err = parse(t, []string{"--secret-key-file", file}, nil, ""); err != nil || len(o.cfg.SecretKeys) != 1 {
		t.Fatalf("--secret-key-file: %v, %v", o.cfg.SecretKeys, err)
	}
	if _, err := parse(t, []string{"--secret-key-file", file}, map[string]string{"BOOMERANG_SECRET_KEY": key}, ""); err == nil {
		t.Fatal("both a key file and BOOMERANG_SECRET_KEY were accepted")
	}
	if _, err := parse(t, nil, map[string]string{"BOOMERANG_SECRET_KEY": "too-short"}, ""); err == nil {
		t.Fatal("a malformed key was accepted")
	}
	if _, err := parse(t, []string{"--tls-cert", file}, nil, ""); err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("--tls-cert without --tls-key: %v", err)
	}
	if o, err = parse(t, nil, nil, ""); err != nil || len(o.cfg.CallbackDeny) != 1 || o.cfg.CallbackDeny[0] != "default" || o.cfg.TLS != nil {
		t.Fatalf("defaults: deny %v, TLS %v, %v", o.cfg.CallbackDeny, o.cfg.TLS, err)
	}
	o, err = parse(t, nil, map[string]string{"BOOMERANG_CALLBACK_DENY": "default;10.0.0.0/8 ::1"}, "callback-allow:\n  - '*.example.com'\n")
	if err != nil || len(o.cfg.CallbackDeny) != 3 || len(o.cfg.CallbackAllow) != 1 {
		t.Fatalf("callback rules from the environment and the file: %v %v, %v", o.cfg.CallbackDeny, o.cfg.CallbackAllow, err)
	}
}
