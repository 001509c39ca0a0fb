package outbox

import (
	"fmt"
	"strings"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// columnTypes are the SQL types of the columns whose values travel as
// text and are cast back: ids of any type, a status that may be an enum.
type columnTypes struct{ id, status string }

// queries holds a source's SQL, built once from its configuration.
type queries struct {
	cfg   *Config
	t     tableName
	c     Columns
	types columnTypes

	fence, writers, heads, headsOf, lockHeads, lockFree, queued, poison string
	finished, deleted, own, rows, stale, lag                            string
	lockLease, acquire, renew, resign, claim, heartbeat                 string
}

func newQueries(cfg Config, t tableName, types columnTypes) *queries {
	q := &queries{cfg: &cfg, t: t, c: cfg.Columns, types: types}
	q.build()
	return q
}

// col quotes a column of alias a; an absent optional column reads NULL.
func (q *queries) col(a, name string) string {
	if name == NoColumn {
		return "NULL::text"
	}
	if a == "" {
		return ident(name)
	}
	return a + "." + ident(name)
}

// orderCols are the columns of the order index: group, then the order
// within it.
func (q *queries) orderCols() []string {
	cols := []string{ident(q.c.Group)}
	if q.c.Sequence != NoColumn {
		cols = append(cols, ident(q.c.Sequence))
	}
	return append(cols, ident(q.c.CreatedAt), ident(q.c.ID))
}

// order is the ORDER BY of rows within a group.
func (q *queries) order(a string) string {
	var cols []string
	for _, c := range q.orderCols()[1:] {
		cols = append(cols, a+"."+c)
	}
	return strings.Join(cols, ", ")
}

func modeName(m storepb.DispatchMode) string {
	return strings.TrimPrefix(m.String(), "DISPATCH_MODE_")
}

// mode is a row's dispatch mode, its default filled in.
func (q *queries) mode(a string) string {
	def := modeName(q.cfg.Mode)
	if q.c.Mode == NoColumn {
		return "'" + def + "'"
	}
	return fmt.Sprintf("coalesce(%s, '%s')", q.col(a, q.c.Mode), def)
}

// free says a row is not held back by its group: it has none, or is
// IMMEDIATE. The same text is the predicate of the free-rows index, so
// the planner can match them.
func (q *queries) free(a string) string {
	g := q.col(a, q.c.Group)
	return fmt.Sprintf("(%s = '' OR %s IS NULL OR %s = 'IMMEDIATE')", g, g, q.mode(a))
}

func (q *queries) build() {
	t, c := q.t, q.c
	id, status := ident(c.ID), ident(c.Status)
	castID := "::text::" + q.types.id
	q.fence = fmt.Sprintf("SELECT holder, term FROM %s WHERE source = $1 FOR KEY SHARE", t.qualified(leaseTable))
	// The transactions that may be writing rows (doc.go, "Order").
	q.writers = `SELECT DISTINCT virtualtransaction FROM pg_locks
WHERE locktype = 'relation' AND relation = $1::oid AND mode = 'RowExclusiveLock' AND granted AND pid <> pg_backend_pid()`

	// The group's first gated rows, in order, up to a limit (the last
	// parameter), and whether the group is blocked.
	blocked := "false"
	if q.c.Mode != NoColumn || q.cfg.Mode == storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR {
		blocked = fmt.Sprintf("EXISTS (SELECT 1 FROM %s e WHERE e.%s = grp.g AND e.%s = 'ERROR' AND %s = 'BLOCK_ON_ERROR')",
			t, ident(c.Group), status, q.mode("e"))
	}
	gated := func(limit string) string {
		return fmt.Sprintf(`SELECT array_agg(x.id ORDER BY x.rn) AS ids, array_agg(x.status ORDER BY x.rn) AS statuses,
	array_agg(x.owner ORDER BY x.rn) AS owners, array_agg(x.mode ORDER BY x.rn) AS modes
FROM (SELECT o.%s::text AS id, o.%s::text AS status, coalesce(o.%s::text, '') AS owner, %s::text AS mode,
		row_number() OVER (ORDER BY %s) AS rn
	FROM %s o
	WHERE o.%s = grp.g AND o.%s IN ('PENDING', 'QUEUED') AND NOT %s
	ORDER BY %s LIMIT %s) x`, id, status, ident(c.Owner), q.mode("o"), q.order("o"), t, ident(c.Group), status, q.free("o"), q.order("o"), limit)
	}
	headsOf := func(groups, limit string) string {
		return fmt.Sprintf(`WITH %s
SELECT grp.g, h.ids, h.statuses, h.owners, h.modes, %s
FROM grp
LEFT JOIN LATERAL (%s) h ON grp.g IS NOT NULL
ORDER BY grp.g NULLS LAST`, groups, blocked, gated(limit))
	}
	// Full poll: the groups after a cursor, one index probe each.
	q.heads = headsOf(fmt.Sprintf(`RECURSIVE grp(g, n) AS (
	(SELECT o.%[1]s::text, 1 FROM %[2]s o WHERE o.%[3]s IN ('PENDING', 'QUEUED') AND o.%[1]s > $1 ORDER BY o.%[1]s LIMIT 1)
	UNION ALL
	SELECT (SELECT o.%[1]s::text FROM %[2]s o WHERE o.%[3]s IN ('PENDING', 'QUEUED') AND o.%[1]s > grp.g ORDER BY o.%[1]s LIMIT 1), grp.n + 1
	FROM grp WHERE grp.g IS NOT NULL AND grp.n < $2
)`, ident(c.Group), t, status), "$3")
	q.headsOf = headsOf("grp(g) AS (SELECT DISTINCT unnest($1::text[]))", "$2")

	sel := fmt.Sprintf("o.%s::text, coalesce(o.%s, ''), o.%s, %s::text, %s::text",
		id, ident(c.Group), ident(c.Payload), q.col("o", c.Target), q.col("o", c.Mode))
	q.lockHeads = fmt.Sprintf("SELECT %s FROM %s o WHERE o.%s = ANY($1::text[]::%s[]) AND o.%s = 'PENDING' FOR UPDATE OF o SKIP LOCKED",
		sel, t, id, q.types.id, status)
	q.lockFree = fmt.Sprintf("SELECT %s FROM %s o WHERE o.%s = 'PENDING' AND %s ORDER BY %s LIMIT $1 FOR UPDATE OF o SKIP LOCKED",
		sel, t, status, q.free("o"), q.order("o"))

	// The updates of a batch of rows join the table with the batch's
	// arrays (unnest). The ids are given as an array as well, which only
	// the primary key serves, so that the rows are probed by id rather
	// than the whole table hashed; and the statements run with nested
	// loops off (noNestedLoops), since an estimate of one matching row
	// (statistics taken when no row was QUEUED, after a bulk insert, or
	// a generic plan's guess at the arrays' length) otherwise has the
	// planner rescan the whole batch for each row it finds: half a second
	// and more for a few thousand rows (TestUpdatesProbeByID).
	q.queued = fmt.Sprintf(`UPDATE %s o SET %s = 'QUEUED', %s = u.task, %s = $3, %s = now()
FROM unnest($1::text[], $2::bigint[]) AS u(id, task)
WHERE o.%s = ANY($1::text[]::%s[]) AND o.%s = u.id%s AND o.%s = 'PENDING'`, t, status, ident(c.TaskID), ident(c.Owner), ident(c.QueuedAt), id, q.types.id, id, castID, status)
	setErr := ""
	if c.LastError != NoColumn {
		setErr = ", " + ident(c.LastError) + " = nullif(u.err, '')"
	}
	q.poison = fmt.Sprintf(`UPDATE %s o SET %s = 'ERROR'%s
FROM unnest($1::text[], $2::text[]) AS u(id, err)
WHERE o.%s = ANY($1::text[]::%s[]) AND o.%s = u.id%s AND o.%s = 'PENDING'`, t, status, setErr, id, q.types.id, id, castID, status)

	// Final outcomes: only the row's owner, for the task it queued.
	setAttempts := ""
	if c.Attempts != NoColumn {
		// 0: not known (a task found gone at recovery); keep the count.
		setAttempts = fmt.Sprintf(", %s = coalesce(nullif(u.attempts, 0), o.%s)", ident(c.Attempts), ident(c.Attempts))
	}
	// As for the updates above, and more: statistics taken when few rows
	// were QUEUED make the planner expect a single row of the node QUEUED.
	// Compared plainly, the owner and status then match the queued index,
	// and every row the node has QUEUED is hashed for each batch; so they
	// are compared as a pair, a form no index serves.
	match := fmt.Sprintf("o.%s = ANY($1::text[]::%s[]) AND o.%s = u.id%s AND o.%s = u.task AND ((o.%s, o.%s) = ($2, 'QUEUED')) IS TRUE",
		id, q.types.id, id, castID, ident(c.TaskID), ident(c.Owner), status)
	returning := fmt.Sprintf("RETURNING coalesce(o.%s, ''), NOT %s", ident(c.Group), q.free("o"))
	q.finished = fmt.Sprintf(`UPDATE %s o SET %s = (CASE WHEN u.ok THEN 'DONE' ELSE 'ERROR' END)::%s%s%s
FROM unnest($1::text[], $3::bigint[], $4::bool[], $5::text[], $6::int[]) AS u(id, task, ok, err, attempts)
WHERE %s %s, u.ok`, t, status, q.types.status, setErr, setAttempts, match, returning)
	q.deleted = fmt.Sprintf(`DELETE FROM %s o USING unnest($1::text[], $3::bigint[]) AS u(id, task)
WHERE %s %s, true`, t, match, returning)

	q.own = fmt.Sprintf(`SELECT o.%s::text, o.%s FROM %s o
WHERE o.%s = 'QUEUED' AND o.%s = $1 AND o.%s < now() - $2::interval AND ($3::text IS NULL OR o.%s > $3%s)
ORDER BY o.%s LIMIT $4`, id, ident(c.TaskID), t, status, ident(c.Owner), ident(c.QueuedAt), id, castID, id)
	q.rows = fmt.Sprintf("SELECT o.%s::text, o.%s::text, coalesce(o.%s, 0), coalesce(o.%s, '') FROM %s o WHERE o.%s = ANY($1::text[]::%s[])",
		id, status, ident(c.TaskID), ident(c.Owner), t, id, q.types.id)
	q.stale = fmt.Sprintf(`UPDATE %s o SET %s = 'PENDING', %s = NULL, %s = NULL, %s = NULL
WHERE o.%s = 'QUEUED' AND o.%s < now() - $1::interval AND o.%s IS DISTINCT FROM $2
AND NOT EXISTS (SELECT 1 FROM %s n WHERE n.source = $3 AND n.node = o.%s AND n.seen_at >= now() - $1::interval)`,
		t, status, ident(c.TaskID), ident(c.Owner), ident(c.QueuedAt),
		status, ident(c.QueuedAt), ident(c.Owner), t.qualified(nodeTable), ident(c.Owner))
	q.lag = fmt.Sprintf("SELECT coalesce(extract(epoch FROM now() - min(%s)), 0)::float8 FROM %s WHERE %s = 'PENDING'",
		ident(c.CreatedAt), t, status)

	lease := t.qualified(leaseTable)
	// Takeovers lock the row first: that waits for the transactions of
	// the primary, which hold it FOR KEY SHARE.
	q.lockLease = fmt.Sprintf("SELECT 1 FROM %s WHERE source = $1 FOR UPDATE", lease)
	q.acquire = fmt.Sprintf(`INSERT INTO %[1]s AS l (source, holder, term, expires_at) VALUES ($1, $2, 1, now() + $3::interval)
ON CONFLICT (source) DO UPDATE SET holder = EXCLUDED.holder, term = l.term + 1, expires_at = EXCLUDED.expires_at
WHERE l.expires_at < now() OR l.holder = EXCLUDED.holder
RETURNING term`, lease)
	q.renew = fmt.Sprintf("UPDATE %s SET expires_at = now() + $3::interval WHERE source = $1 AND holder = $2 AND term = $4", lease)
	q.resign = fmt.Sprintf("UPDATE %s SET expires_at = now() WHERE source = $1 AND holder = $2 AND term = $3", lease)
	q.claim = fmt.Sprintf(`INSERT INTO %[1]s AS l (source, holder, term, expires_at) VALUES ($1, $2, $3, now())
ON CONFLICT (source) DO UPDATE SET holder = EXCLUDED.holder, term = EXCLUDED.term
WHERE l.term < EXCLUDED.term OR (l.term = EXCLUDED.term AND l.holder = EXCLUDED.holder)`, lease)
	q.heartbeat = fmt.Sprintf(`INSERT INTO %s (source, node, seen_at) VALUES ($1, $2, now())
ON CONFLICT (source, node) DO UPDATE SET seen_at = now()`, t.qualified(nodeTable))
}

// noNestedLoops turns nested loops off for the rest of a transaction: the
// batch updates' joins are then hashed, whatever the row estimates.
const noNestedLoops = "SET LOCAL enable_nestloop = off"
