package delivery

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// metricValue finds a series by name and labels in reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func TestMetrics(t *testing.T) {
	ln := tcpReceiver(t, func(_ context.Context, d *boomerangv1.Delivery) error {
		if strings.HasPrefix(string(d.Payload), "bad") {
			return errors.New("no")
		}
		return nil
	})
	reg := prometheus.NewRegistry()
	e, _ := newEngine(t, tcpCallback(ln.Addr().String()), func(c *Config) {
		c.Registerer = reg
		c.Pools = map[string]PoolConfig{"bulk": {MaxConcurrent: 8}}
	})
	for _, p := range []string{"ok", "ok", "bad"} {
		_ = deliver(e, task(p), 1).wait(t)
	}
	tk := task("x")
	_, _ = e.Next(tk, 1, ErrTimeout)
	_, _ = e.Next(tk, 1, permanent(ErrNoCallback))
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"boomerang_delivery_attempts_total", map[string]string{"protocol": "tcp", "outcome": "ok"}, 2},
		{"boomerang_delivery_attempts_total", map[string]string{"protocol": "tcp", "outcome": "rejected"}, 1},
		{"boomerang_delivery_attempts_total", map[string]string{"protocol": "udp", "outcome": "ok"}, 0},
		{"boomerang_delivery_latency_seconds", map[string]string{"protocol": "tcp"}, 3},
		{"boomerang_delivery_retries_total", nil, 1},
		{"boomerang_delivery_final_failures_total", map[string]string{"reason": "permanent"}, 1},
		{"boomerang_delivery_pool_limit", map[string]string{"pool": "bulk"}, 8},
		{"boomerang_delivery_pool_limit", map[string]string{"pool": DefaultPool}, DefaultMaxConcurrent},
		{"boomerang_delivery_pool_in_use", map[string]string{"pool": DefaultPool}, 0},
		{"boomerang_delivery_pool_queued", map[string]string{"pool": DefaultPool}, 0},
		{"boomerang_delivery_pool_saturation", map[string]string{"pool": DefaultPool}, 0},
		{"boomerang_delivery_pool_rejected_total", map[string]string{"pool": DefaultPool}, 0},
	} {
		got, ok := metricValue(t, reg, tc.name, tc.labels)
		if !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	// A second engine on the same registry is refused, leaving the first
	// one's metrics in place.
	if _, err := New(Config{Clients: newClientMap(), Registerer: reg}); err == nil {
		t.Fatal("a second engine registered the same metrics")
	}
	if _, ok := metricValue(t, reg, "boomerang_delivery_retries_total", nil); !ok {
		t.Fatal("the failed registration removed the first engine's metrics")
	}
}

func TestPoolSaturationMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, m := manualEngine(t, func(c *Config) {
		c.Registerer = reg
		c.Pools = map[string]PoolConfig{DefaultPool: {MaxConcurrent: 4}}
	})
	for range 6 {
		deliver(e, task("x"), 1)
	}
	labels := map[string]string{"pool": DefaultPool}
	for name, want := range map[string]float64{
		"boomerang_delivery_pool_in_use":     4,
		"boomerang_delivery_pool_queued":     2,
		"boomerang_delivery_pool_saturation": 1,
	} {
		if got, _ := metricValue(t, reg, name, labels); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for range 6 {
		m.take(t).finish(nil)
	}
}
