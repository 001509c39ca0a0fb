package outbox

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Defaults for Config fields left at zero.
const (
	DefaultTable        = "boomerang_outbox"
	DefaultPollInterval = time.Second
	DefaultBatchSize    = 1000
	DefaultMaxInFlight  = 10000
	DefaultGroupDepth   = 8
	DefaultStaleAfter   = 5 * time.Minute
	DefaultLeaseTTL     = 10 * time.Second
)

// DefaultColumns are the columns of the table `boomerang outbox init`
// creates; a Columns field left empty takes its name from here.
var DefaultColumns = Columns{
	ID: "id", Group: "group_key", Sequence: "sequence", CreatedAt: "created_at", Status: "status",
	Payload: "payload", Target: "target", Mode: "dispatch_mode", Attempts: "attempts", LastError: "last_error",
	TaskID: "task_id", Owner: "owner", QueuedAt: "queued_at",
}

// NoColumn, as a Columns field, says the table has no such column. Only
// Sequence, Target, Mode, Attempts and LastError may be absent.
const NoColumn = "-"

// Columns names the table's columns. See docs/outbox.md for their types.
type Columns struct {
	ID        string // primary key, any type with a text form; the idempotency key
	Group     string // text; '' or NULL: ungrouped
	Sequence  string // the first order key; NoColumn: order by created_at, id
	CreatedAt string // timestamptz; the second order key, and the lag
	Status    string // PENDING, QUEUED, DONE or ERROR (text or an enum)
	Payload   string // bytea or text: the task's payload
	Target    string // a name from Config.Targets; NULL or '': Config.Target
	Mode      string // IMMEDIATE, NEXT_ON_ERROR or BLOCK_ON_ERROR; NULL: Config.Mode
	Attempts  string // integer: delivery attempts of the final outcome
	LastError string // text: why the row is ERROR
	TaskID    string // bigint: the Boomerang task of a QUEUED row
	Owner     string // text: the node whose Boomerang holds that task
	QueuedAt  string // timestamptz: when the row became QUEUED
}

// Target is where a row's task goes: a Boomerang client, whose retry
// policy and dead letter limits apply, and optionally a callback other
// than the client's own (any protocol, queue sinks included).
type Target struct {
	Client   string
	Callback *storepb.Callback // nil: the client's default callback
}

// Config configures one source: one table in one database.
type Config struct {
	// Name identifies the source in metrics, logs, the lease table and
	// the idempotency keys of its tasks. Required: 1 to 64 of a-z, 0-9,
	// "_" and "-".
	Name string

	// DSN is the PostgreSQL connection string (URL or key=value form).
	// Required. Passwords are better kept in PGPASSWORD or ~/.pgpass.
	DSN string

	// Table is the outbox table, optionally schema-qualified. Default
	// "boomerang_outbox". The lease and node tables live in its schema.
	Table string

	// Columns maps the outbox's columns onto the table's; empty fields
	// take DefaultColumns.
	Columns Columns

	// Target is where a row goes unless its target column names one of
	// Targets. Target.Client is required.
	Target Target

	// Targets are the named targets rows may choose. A row naming one
	// that is not here goes to ERROR.
	Targets map[string]Target

	// Mode is the dispatch mode of a row whose mode column is NULL (or
	// of every row without a mode column). Default NEXT_ON_ERROR.
	Mode storepb.DispatchMode

	// PollInterval is the longest the primary waits between polls when
	// nothing wakes it (a notification, a finished row). Default 1 s.
	PollInterval time.Duration

	// BatchSize bounds the rows one poll takes. Default 1000.
	BatchSize int

	// MaxInFlight bounds the rows this node has QUEUED and not yet
	// finished; polls take no more while it is reached. Default 10000.
	MaxInFlight int

	// GroupDepth bounds the rows of one group this node has QUEUED at
	// once: the group's head in flight and the rows registered behind it,
	// which Boomerang delivers in order once the head is done (doc.go,
	// "Order"). 1 dispatches a group's next row only when its previous
	// one has finished. Default 8.
	GroupDepth int

	// StaleAfter is how long a row may stay QUEUED by a node that has
	// not been seen before the primary takes it back to PENDING, and how
	// often each node checks its own QUEUED rows. Default 5 minutes.
	StaleAfter time.Duration

	// LeaseTTL is how long a primary's lease lasts without renewal: a
	// standby takes over at most about this long after the primary
	// dies. Renewed every third of it. Default 10 s.
	LeaseTTL time.Duration

	// DeleteDone deletes a row once delivered instead of marking it
	// DONE.
	DeleteDone bool
}

// Options are what every source of a process shares.
type Options struct {
	// Node names this Boomerang instance: the owner of the rows whose
	// tasks its store holds. It must stay the same across restarts on
	// the same data directory and differ between instances. Required.
	Node string
	// Logger receives lifecycle events and errors, never a line per row.
	// Default: discard.
	Logger *slog.Logger
	// Clock drives polls, leases and due times. Default: the real clock.
	Clock clockwork.Clock
	// Elector, if set, makes the Elector of each source (by name), in
	// place of the lease row: for a cluster's election.
	Elector func(source string) Elector
}

var sourceName = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

func (c *Config) ensureDefaults() {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	c.Columns = c.Columns.withDefaults()
	if c.Mode == storepb.DispatchMode_DISPATCH_MODE_UNSPECIFIED {
		c.Mode = storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.GroupDepth == 0 {
		c.GroupDepth = DefaultGroupDepth
	}
	if c.StaleAfter == 0 {
		c.StaleAfter = DefaultStaleAfter
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
}

func (cols Columns) withDefaults() Columns {
	fill := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	d := DefaultColumns
	fill(&cols.ID, d.ID)
	fill(&cols.Group, d.Group)
	fill(&cols.Sequence, d.Sequence)
	fill(&cols.CreatedAt, d.CreatedAt)
	fill(&cols.Status, d.Status)
	fill(&cols.Payload, d.Payload)
	fill(&cols.Target, d.Target)
	fill(&cols.Mode, d.Mode)
	fill(&cols.Attempts, d.Attempts)
	fill(&cols.LastError, d.LastError)
	fill(&cols.TaskID, d.TaskID)
	fill(&cols.Owner, d.Owner)
	fill(&cols.QueuedAt, d.QueuedAt)
	return cols
}

// refillAt is how few rows of a group this node must have QUEUED before
// a finished row has the group polled again: a quarter of the depth (at
// least one row, below a depth of one), so that a poll tops the group up
// by several rows at once (one index probe, one lock, one release of the
// lot) rather than row by row, while the group's queue in Boomerang does
// not run dry during the poll.
func (c *Config) refillAt() int { return max(c.GroupDepth/4, min(c.GroupDepth-1, 1)) }

func (c *Config) validate() error {
	switch {
	case !sourceName.MatchString(c.Name):
		return fmt.Errorf("outbox: source name %q must be 1 to 64 of a-z, 0-9, _ and -", c.Name)
	case c.DSN == "":
		return fmt.Errorf("outbox: source %s: a connection string (dsn) is required", c.Name)
	case c.PollInterval < time.Millisecond || c.BatchSize < 1 || c.MaxInFlight < 1 || c.GroupDepth < 1:
		return fmt.Errorf("outbox: source %s: poll interval (at least 1ms), batch size, max in flight and group depth must be positive", c.Name)
	case c.StaleAfter < time.Second || c.LeaseTTL < 100*time.Millisecond:
		return fmt.Errorf("outbox: source %s: stale-after must be at least 1s and lease-ttl at least 100ms", c.Name)
	case c.Mode != storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE && c.Mode != storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR &&
		c.Mode != storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR:
		return fmt.Errorf("outbox: source %s: unknown dispatch mode %v", c.Name, c.Mode)
	}
	if _, err := parseTable(c.Table); err != nil {
		return fmt.Errorf("outbox: source %s: %w", c.Name, err)
	}
	if err := c.Columns.validate(); err != nil {
		return fmt.Errorf("outbox: source %s: %w", c.Name, err)
	}
	if err := validateTarget("target", c.Target); err != nil {
		return fmt.Errorf("outbox: source %s: %w", c.Name, err)
	}
	for name, t := range c.Targets {
		if name == "" {
			return fmt.Errorf("outbox: source %s: a target needs a name", c.Name)
		}
		if err := validateTarget("target "+name, t); err != nil {
			return fmt.Errorf("outbox: source %s: %w", c.Name, err)
		}
	}
	return nil
}

func (cols Columns) validate() error {
	for name, v := range map[string]string{
		"id": cols.ID, "group": cols.Group, "created_at": cols.CreatedAt, "status": cols.Status,
		"payload": cols.Payload, "task_id": cols.TaskID, "owner": cols.Owner, "queued_at": cols.QueuedAt,
	} {
		if v == NoColumn {
			return fmt.Errorf("the %s column is required", name)
		}
	}
	for _, v := range []string{cols.ID, cols.Group, cols.Sequence, cols.CreatedAt, cols.Status, cols.Payload,
		cols.Target, cols.Mode, cols.Attempts, cols.LastError, cols.TaskID, cols.Owner, cols.QueuedAt} {
		if strings.ContainsRune(v, 0) || len(v) > 63 {
			return fmt.Errorf("column name %q must be at most 63 bytes without NUL", v)
		}
	}
	return nil
}

func validateTarget(what string, t Target) error {
	if t.Client == "" {
		return fmt.Errorf("%s: a Boomerang client is required", what)
	}
	if err := delivery.ValidateCallback(t.Callback, 0); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// tableName is a table, split into schema (maybe empty) and name.
type tableName struct{ schema, name string }

func parseTable(s string) (tableName, error) {
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if p == "" || len(p) > 63 || strings.ContainsRune(p, 0) {
			return tableName{}, fmt.Errorf("table %q must be name or schema.name, each at most 63 bytes", s)
		}
	}
	switch len(parts) {
	case 1:
		return tableName{name: parts[0]}, nil
	case 2:
		return tableName{schema: parts[0], name: parts[1]}, nil
	}
	return tableName{}, fmt.Errorf("table %q must be name or schema.name", s)
}

func (o *Options) ensureDefaults() error {
	if o.Node == "" {
		return errors.New("outbox: Options.Node is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	return nil
}
