package server

import (
	"context"
	"strings"
	"testing"

	"github.com/boomerangd/boomerang/internal/auth"
)

func TestClusterConfigValidate(t *testing.T) {
	ok := func() *ClusterConfig { return &ClusterConfig{Name: "prod", NodeID: 2, Etcd: []string{"10.0.0.9:2379"}} }
	for _, tc := range []struct {
		name   string
		change func(*ClusterConfig)
		want   string // "" = valid
	}{
		{"defaults", func(*ClusterConfig) {}, ""},
		{"no name", func(c *ClusterConfig) { c.Name = "" }, "needs a name"},
		{"no id", func(c *ClusterConfig) { c.NodeID = 0 }, "id above 0"},
		{"no etcd", func(c *ClusterConfig) { c.Etcd = nil }, "etcd endpoints"},
		{"any port", func(c *ClusterConfig) { c.Addr = "127.0.0.1:0" }, "set --advertise"},
		{"any host", func(c *ClusterConfig) { c.Addr = "0.0.0.0:7072" }, "set --advertise"},
		{"advertised", func(c *ClusterConfig) { c.Addr, c.Advertise = "0.0.0.0:7072", "10.0.0.2:7072" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok()
			tc.change(c)
			err := c.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if c := ok(); c.validate() != nil || c.Addr != DefaultClusterAddr || c.Advertise != DefaultClusterAddr {
		t.Fatalf("defaults: %+v", c)
	}
}

// A node takes the identity a forwarded request claims only with a
// fresh signature of the cluster's key.
func TestForwardedIdentity(t *testing.T) {
	ctx := context.Background()
	keyed := func(key string) *forwarder {
		return &forwarder{key: func(context.Context) ([]byte, error) { return []byte(key), nil }}
	}
	f := keyed("cluster key")
	p := auth.Principal{Client: "billing", Role: auth.RoleAdmin}
	sig, err := f.sign(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := f.forwarded(ctx, sig); !ok || got.Client != p.Client || got.Role != p.Role {
		t.Fatalf("a good signature gave %+v, %v", got, ok)
	}
	other, _ := keyed("another cluster's key").sign(ctx, p)
	parts := strings.Split(sig, ";")
	stale := strings.Join(parts[:2], ";") + ";" + "1000"
	for name, header := range map[string]string{
		"none":          "",
		"another key":   other,
		"other client":  strings.Replace(sig, "billing", "admin", 1),
		"other role":    strings.Join(append([]string{parts[0], "0"}, parts[2:]...), ";"),
		"stale":         stale + ";" + mac([]byte("cluster key"), stale),
		"standalone":    sig, // checked by a nil forwarder below
		"missing parts": strings.Join(parts[:3], ";"),
	} {
		g := f
		if name == "standalone" {
			g = nil
		}
		if got, ok := g.forwarded(ctx, header); ok {
			t.Errorf("%s: accepted as %+v", name, got)
		}
	}
}
