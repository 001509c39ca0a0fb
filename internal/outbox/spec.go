package outbox

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// ParseSource reads a source from its one-line form, the value of the
// server's --outbox-source flag: comma-separated key=value settings, a
// value in single quotes when it holds a comma, e.g.
//
//	name=orders,dsn=postgres://app@db/shop,client=orders,callback=http://orders:8080/jobs
//
// Keys: name, dsn, table, client, callback (a URL: http(s)://, grpc://,
// tcp://, udp://, nats://, amqp(s)://), pool, timeout, mode
// (immediate, next-on-error, block-on-error), poll-interval, batch,
// max-in-flight, stale-after, lease-ttl, delete-done (true or false),
// column.<name>=<column> (id, group, sequence, created-at, status,
// payload, target, mode, attempts, last-error, task-id, owner,
// queued-at), target.<name>=<callback URL> and target.<name>.client=<client>.
func ParseSource(s string) (Config, error) {
	kvs, err := splitSettings(s)
	if err != nil {
		return Config{}, err
	}
	var cfg Config
	var callback, pool string
	var timeout time.Duration
	targets := map[string]*targetSpec{}
	for _, kv := range kvs {
		key, val := kv[0], kv[1]
		switch {
		case strings.HasPrefix(key, "column."):
			if err := setColumn(&cfg.Columns, strings.TrimPrefix(key, "column."), val); err != nil {
				return Config{}, err
			}
		case strings.HasPrefix(key, "target."):
			name, field, _ := strings.Cut(strings.TrimPrefix(key, "target."), ".")
			ts := targets[name]
			if ts == nil {
				ts = &targetSpec{}
				targets[name] = ts
			}
			switch field {
			case "":
				ts.callback = val
			case "client":
				ts.client = val
			default:
				return Config{}, fmt.Errorf("outbox: unknown setting %q", key)
			}
		default:
			if err := setScalar(&cfg, key, val, &callback, &pool, &timeout); err != nil {
				return Config{}, err
			}
		}
	}
	if cfg.Target.Callback, err = callbackSetting(callback, pool, timeout); err != nil {
		return Config{}, err
	}
	for name, ts := range targets {
		t := Target{Client: cmpOr(ts.client, cfg.Target.Client)}
		if t.Callback, err = callbackSetting(ts.callback, pool, timeout); err != nil {
			return Config{}, fmt.Errorf("outbox: target %s: %w", name, err)
		}
		if cfg.Targets == nil {
			cfg.Targets = map[string]Target{}
		}
		cfg.Targets[name] = t
	}
	return cfg, nil
}

type targetSpec struct{ callback, client string }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func setScalar(cfg *Config, key, val string, callback, pool *string, timeout *time.Duration) error {
	var err error
	switch key {
	case "name":
		cfg.Name = val
	case "dsn":
		cfg.DSN = val
	case "table":
		cfg.Table = val
	case "client":
		cfg.Target.Client = val
	case "callback":
		*callback = val
	case "pool":
		*pool = val
	case "timeout":
		*timeout, err = time.ParseDuration(val)
	case "mode":
		m, ok := storepb.DispatchMode_value["DISPATCH_MODE_"+strings.ToUpper(strings.ReplaceAll(val, "-", "_"))]
		if !ok || m == 0 {
			return fmt.Errorf("outbox: mode %q: want immediate, next-on-error or block-on-error", val)
		}
		cfg.Mode = storepb.DispatchMode(m)
	case "poll-interval":
		cfg.PollInterval, err = time.ParseDuration(val)
	case "stale-after":
		cfg.StaleAfter, err = time.ParseDuration(val)
	case "lease-ttl":
		cfg.LeaseTTL, err = time.ParseDuration(val)
	case "batch":
		cfg.BatchSize, err = strconv.Atoi(val)
	case "max-in-flight":
		cfg.MaxInFlight, err = strconv.Atoi(val)
	case "group-depth":
		cfg.GroupDepth, err = strconv.Atoi(val)
	case "delete-done":
		cfg.DeleteDone, err = strconv.ParseBool(val)
	default:
		return fmt.Errorf("outbox: unknown setting %q", key)
	}
	if err != nil {
		return fmt.Errorf("outbox: %s: %w", key, err)
	}
	return nil
}

func setColumn(c *Columns, name, col string) error {
	fields := map[string]*string{
		"id": &c.ID, "group": &c.Group, "sequence": &c.Sequence, "created-at": &c.CreatedAt, "status": &c.Status,
		"payload": &c.Payload, "target": &c.Target, "mode": &c.Mode, "attempts": &c.Attempts, "last-error": &c.LastError,
		"task-id": &c.TaskID, "owner": &c.Owner, "queued-at": &c.QueuedAt,
	}
	f := fields[name]
	if f == nil {
		return fmt.Errorf("outbox: unknown column %q", name)
	}
	*f = col
	return nil
}

// callbackSetting makes the callback of a URL, with the source's pool and
// timeout; nil for no URL (the client's own callback).
func callbackSetting(raw, pool string, timeout time.Duration) (*storepb.Callback, error) {
	if raw == "" {
		return nil, nil
	}
	cb, err := ParseCallback(raw)
	if err != nil {
		return nil, err
	}
	cb.Pool, cb.TimeoutMs = pool, timeout.Milliseconds()
	return cb, nil
}

// ParseCallback reads a callback URL: http(s)://… for a webhook,
// grpc://host:port, tcp://host:port, udp://host:port, or a queue:
// nats://host:port/subject, amqp(s)://host:port/vhost?…,
// activemq(s)://host:port/queue/NAME, sqs://HOST/ACCOUNT/NAME.fifo.
func ParseCallback(raw string) (*storepb.Callback, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("outbox: callback %q must be a URL with a host", raw)
	}
	switch u.Scheme {
	case "http", "https":
		return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_HTTP, Endpoint: raw}, nil
	case "grpc":
		return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_GRPC, Endpoint: u.Host}, nil
	case "tcp":
		return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_TCP, Endpoint: u.Host}, nil
	case "udp":
		return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_UDP, Endpoint: u.Host}, nil
	case "nats":
		return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_NATS, Endpoint: raw}, nil
	case "amqp", "amqps":
		return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_AMQP, Endpoint: raw}, nil
	case "activemq", "activemqs":
		return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_ACTIVEMQ, Endpoint: raw}, nil
	case "sqs":
		return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_SQS, Endpoint: raw}, nil
	}
	return nil, fmt.Errorf("outbox: callback %q: the scheme must be http, https, grpc, tcp, udp, nats, amqp, amqps, activemq, activemqs or sqs", raw)
}

// splitSettings splits comma-separated key=value settings; a value may
// be single-quoted, with \' and \\ inside. White space around a pair is
// ignored.
func splitSettings(s string) ([][2]string, error) {
	var out [][2]string
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == ',') {
			i++
		}
		if i == len(s) {
			return out, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 || strings.ContainsAny(s[i:i+eq], " \t\n',") {
			return nil, fmt.Errorf("outbox: source settings %q: want key=value pairs", s)
		}
		key := s[i : i+eq]
		i += eq + 1
		var val strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			for ; i < len(s) && s[i] != '\''; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, fmt.Errorf("outbox: source settings: unterminated quote after %s=", key)
			}
			i++
			if i < len(s) && s[i] != ',' {
				return nil, fmt.Errorf("outbox: source settings: a comma must follow the quoted value of %s", key)
			}
		} else {
			for ; i < len(s) && s[i] != ','; i++ {
				val.WriteByte(s[i])
			}
		}
		out = append(out, [2]string{key, strings.TrimSpace(val.String())})
	}
}
