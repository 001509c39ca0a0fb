package outbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the LISTEN/NOTIFY channel the triggers of `boomerang
// outbox init` notify on; the payload is the table, schema-qualified.
const NotifyChannel = "boomerang_outbox"

// ident quotes one identifier.
func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

// qualified quotes a table or another object of the table's schema.
func (t tableName) qualified(name string) string {
	if t.schema == "" {
		return ident(name)
	}
	return pgx.Identifier{t.schema, name}.Sanitize()
}

func (t tableName) String() string { return t.qualified(t.name) }

// objectName derives the name of an index or trigger of the table,
// within PostgreSQL's 63 bytes.
func (t tableName) objectName(suffix string) string {
	base := t.name
	if len(base)+len(suffix) > 63 {
		base = base[:63-len(suffix)]
	}
	return base + suffix
}

// InitSQL returns the statements `boomerang outbox init` runs for a
// source, in order. Each is idempotent. When the table does not exist
// (exists false) it is created with cfg's column names and a trigger that
// numbers rows; an existing table only gains the bookkeeping columns it
// lacks (task id, owner, queued at). Both get the notify trigger, the
// partial indexes the polls use, and the lease and node tables.
func InitSQL(cfg Config, exists bool) ([]string, error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t, _ := parseTable(cfg.Table)
	c := cfg.Columns
	var stmts []string
	if t.schema != "" {
		stmts = append(stmts, "CREATE SCHEMA IF NOT EXISTS "+ident(t.schema))
	}
	if exists {
		for _, col := range [][2]string{{c.TaskID, "bigint"}, {c.Owner, "text"}, {c.QueuedAt, "timestamptz"}} {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", t, ident(col[0]), col[1]))
		}
	} else {
		stmts = append(stmts, createTable(t, c)...)
	}
	q := newQueries(cfg, t, columnTypes{id: "bigint", status: "text"})
	stmts = append(stmts,
		fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s) WHERE %s IN ('PENDING', 'QUEUED')",
			ident(t.objectName("_boomerang_order")), t, strings.Join(q.orderCols(), ", "), ident(c.Status)),
		fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s) WHERE %s = 'PENDING' AND %s",
			ident(t.objectName("_boomerang_free")), t, strings.Join(q.orderCols()[1:], ", "), ident(c.Status), q.free("")),
		fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s) WHERE %s = 'ERROR'",
			ident(t.objectName("_boomerang_error")), t, ident(c.Group), ident(c.Status)),
		fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s, %s) WHERE %s = 'QUEUED'",
			ident(t.objectName("_boomerang_queued")), t, ident(c.Owner), ident(c.ID), ident(c.Status)),
		`CREATE OR REPLACE FUNCTION boomerang_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('`+NotifyChannel+`', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME);
	RETURN NULL;
END $$`,
		fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", ident(t.objectName("_boomerang_notify")), t),
		fmt.Sprintf("CREATE TRIGGER %s AFTER INSERT OR UPDATE OF %s ON %s FOR EACH ROW WHEN (NEW.%s = 'PENDING') EXECUTE FUNCTION boomerang_outbox_notify()",
			ident(t.objectName("_boomerang_notify")), ident(c.Status), t, ident(c.Status)),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	source     text PRIMARY KEY,
	holder     text NOT NULL,
	term       bigint NOT NULL,
	expires_at timestamptz NOT NULL
)`, t.qualified(leaseTable)),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	source  text NOT NULL,
	node    text NOT NULL,
	seen_at timestamptz NOT NULL,
	PRIMARY KEY (source, node)
)`, t.qualified(nodeTable)),
	)
	return stmts, nil
}

// Names of the control tables, in the outbox table's schema.
const (
	leaseTable = "boomerang_outbox_lease"
	nodeTable  = "boomerang_outbox_node"
)

// createTable is the default table, with cfg's column names, and the
// trigger that gives a row without a sequence the next one, drawn inside
// the INSERT, as the ordering guard requires (doc.go, "Order").
func createTable(t tableName, c Columns) []string {
	cols := []string{
		ident(c.ID) + " bigserial PRIMARY KEY",
		ident(c.Group) + " text NOT NULL DEFAULT ''",
	}
	if c.Sequence != NoColumn {
		cols = append(cols, ident(c.Sequence)+" bigint")
	}
	cols = append(cols,
		ident(c.CreatedAt)+" timestamptz NOT NULL DEFAULT now()",
		ident(c.Status)+" text NOT NULL DEFAULT 'PENDING' CHECK ("+ident(c.Status)+" IN ('PENDING', 'QUEUED', 'DONE', 'ERROR'))",
		ident(c.Payload)+" bytea NOT NULL DEFAULT ''",
	)
	if c.Target != NoColumn {
		cols = append(cols, ident(c.Target)+" text")
	}
	if c.Mode != NoColumn {
		cols = append(cols, ident(c.Mode)+" text CHECK ("+ident(c.Mode)+" IN ('IMMEDIATE', 'NEXT_ON_ERROR', 'BLOCK_ON_ERROR'))")
	}
	if c.Attempts != NoColumn {
		cols = append(cols, ident(c.Attempts)+" integer NOT NULL DEFAULT 0")
	}
	if c.LastError != NoColumn {
		cols = append(cols, ident(c.LastError)+" text")
	}
	cols = append(cols, ident(c.TaskID)+" bigint", ident(c.Owner)+" text", ident(c.QueuedAt)+" timestamptz")
	stmts := []string{fmt.Sprintf("CREATE TABLE %s (\n\t%s\n)", t, strings.Join(cols, ",\n\t"))}
	if c.Sequence == NoColumn {
		return stmts
	}
	seq := t.qualified(t.objectName("_sequence"))
	fn := t.qualified(t.objectName("_number"))
	return append(stmts,
		"CREATE SEQUENCE IF NOT EXISTS "+seq,
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.%s IS NULL THEN
		NEW.%s := nextval('%s');
	END IF;
	RETURN NEW;
END $$`, fn, ident(c.Sequence), ident(c.Sequence), strings.ReplaceAll(seq, "'", "''")),
		fmt.Sprintf("CREATE TRIGGER %s BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION %s()",
			ident(t.objectName("_boomerang_number")), t, fn),
	)
}

// Init prepares cfg's database for the source: see InitSQL. It runs in
// one transaction.
func Init(ctx context.Context, cfg Config) error {
	cfg.ensureDefaults()
	conn, err := pgx.Connect(ctx, cfg.DSN)
	if err != nil {
		return fmt.Errorf("outbox: init %s: %w", cfg.Name, err)
	}
	defer conn.Close(ctx)
	exists, err := tableExists(ctx, conn, cfg.Table)
	if err != nil {
		return fmt.Errorf("outbox: init %s: %w", cfg.Name, err)
	}
	stmts, err := InitSQL(cfg, exists)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("outbox: init %s: %w\n%s", cfg.Name, err, s)
			}
		}
		return nil
	})
}

func tableExists(ctx context.Context, conn *pgx.Conn, table string) (bool, error) {
	t, err := parseTable(table)
	if err != nil {
		return false, err
	}
	var exists bool
	err = conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t.String()).Scan(&exists)
	return exists, err
}
