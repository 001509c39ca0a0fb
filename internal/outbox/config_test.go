package outbox

import (
	"strings"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func TestParseSource(t *testing.T) {
	cfg, err := ParseSource("name=orders, dsn='host=db user=app password=a,b', client=shop, callback=nats://n:4222/orders.{group}," +
		"mode=block-on-error,poll-interval=250ms,batch=50,group-depth=3,delete-done=true,column.group=aggregate_id,column.target=-," +
		"target.audit=amqp://rabbit/?routing_key=audit,target.audit.client=auditor,timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case cfg.Name != "orders" || cfg.DSN != "host=db user=app password=a,b" || cfg.Target.Client != "shop":
		t.Errorf("name, dsn, client: %+v", cfg)
	case cfg.Target.Callback.GetProtocol() != storepb.Protocol_PROTOCOL_NATS || cfg.Target.Callback.TimeoutMs != 3000:
		t.Errorf("callback %v", cfg.Target.Callback)
	case cfg.Mode != storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR || cfg.PollInterval != 250*time.Millisecond || cfg.BatchSize != 50 || cfg.GroupDepth != 3 || !cfg.DeleteDone:
		t.Errorf("settings %+v", cfg)
	case cfg.Columns.Group != "aggregate_id" || cfg.Columns.Target != NoColumn:
		t.Errorf("columns %+v", cfg.Columns)
	case cfg.Targets["audit"].Client != "auditor" || cfg.Targets["audit"].Callback.GetProtocol() != storepb.Protocol_PROTOCOL_AMQP:
		t.Errorf("targets %+v", cfg.Targets)
	}
	for _, bad := range []string{"name", "name=x,bogus=1", "mode=sometimes", "column.nope=x", "callback=ftp://x/", "dsn='open", "batch=many", "group-depth=deep", "target.a.b=c"} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("ParseSource(%q) succeeded", bad)
		}
	}
}

func TestParseCallbackQueueSinks(t *testing.T) {
	for raw, want := range map[string]storepb.Protocol{
		"activemq://mq:61613/queue/orders.{group}":                   storepb.Protocol_PROTOCOL_ACTIVEMQ,
		"activemqs://mq/queue/orders":                                storepb.Protocol_PROTOCOL_ACTIVEMQ,
		"sqs://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo": storepb.Protocol_PROTOCOL_SQS,
	} {
		cb, err := ParseCallback(raw)
		if err != nil || cb.Protocol != want || cb.Endpoint != raw {
			t.Errorf("ParseCallback(%q) = %v, %v", raw, cb, err)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	good := func() Config {
		return Config{Name: "orders", DSN: "postgres://x/y", Target: Target{Client: "c"}}
	}
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"bad name":  {func(c *Config) { c.Name = "Orders!" }, "source name"},
		"no dsn":    {func(c *Config) { c.DSN = "" }, "dsn"},
		"no client": {func(c *Config) { c.Target.Client = "" }, "client is required"},
		"bad callback": {func(c *Config) {
			c.Target.Callback = &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_NATS, Endpoint: "nats://h"}
		}, "subject"},
		"table":           {func(c *Config) { c.Table = "a.b.c" }, "schema.name"},
		"required column": {func(c *Config) { c.Columns.Status = NoColumn }, "status column is required"},
		"named target":    {func(c *Config) { c.Targets = map[string]Target{"x": {}} }, "target x"},
		"short lease":     {func(c *Config) { c.LeaseTTL = time.Millisecond }, "lease-ttl"},
		"group depth":     {func(c *Config) { c.GroupDepth = -1 }, "group depth"},
	} {
		cfg := good()
		tc.edit(&cfg)
		cfg.ensureDefaults()
		err := cfg.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}
	cfg := good()
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
}

func TestGuard(t *testing.T) {
	g := newGuard(100)
	g.begin(writerSet{})
	g.see("r1")
	if g.settled("r1") {
		t.Fatal("a row seen by this poll is settled")
	}
	g.begin(writerSet{"3/7": {}}) // the writers after r1's snapshot
	if g.settled("r1") {
		t.Fatal("settled while its writer runs")
	}
	g.begin(writerSet{"3/7": {}, "4/9": {}})
	if g.settled("r1") {
		t.Fatal("settled while its writer still runs")
	}
	g.see("r2") // blockers: the next poll's writers
	g.begin(writerSet{"4/9": {}})
	if !g.settled("r1") || g.settled("r2") {
		t.Fatal("r1 should be settled (3/7 ended), r2 not (4/9 runs)")
	}
	g.begin(writerSet{})
	if !g.settled("r2") {
		t.Fatal("r2 not settled once its writers ended")
	}
	g.forget("r1")
	if g.settled("r1") {
		t.Fatal("a forgotten row is settled")
	}
}

func TestKeys(t *testing.T) {
	for _, after := range []string{"", "8444249301319681"} {
		src, id, ok := parseKey(idempotencyKey("orders", after, "a:b"))
		if !ok || src != "orders" || id != "a:b" {
			t.Fatalf("parseKey = %q %q %v", src, id, ok)
		}
	}
	if _, _, ok := parseKey("order-17"); ok {
		t.Fatal("a key of another kind parsed")
	}
}
