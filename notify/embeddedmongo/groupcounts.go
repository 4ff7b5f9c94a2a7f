package embeddedmongo

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
)

// Kept group counts: how many documents of a collection hold each
// combination of values of a few fields (the console's subscriptions by
// service, state and channel), in a small table of ours that triggers on
// the collection's table keep exact. A trigger runs inside the statement
// that changes a document, so the counts change in the same transaction
// as the documents, whoever writes them; [Lookup.Groups] then reads a few
// hundred rows instead of walking an index of a million entries (0.23 s
// at 1M subscriptions, which a node's first dashboard call waited for).
//
// The counts are trusted only while all three triggers exist on the
// collection's current table: a collection dropped and made again
// meanwhile loses them with its old table, and Groups counts with a
// GROUP BY until [Lookup.KeepGroupCounts] runs again at the next start.

// keptNames are the names of the counts table of fields on table t and
// of its insert, update and delete triggers.
func keptNames(t string, fields []string) (table string, triggers [3]string) {
	table = t + "_govkit_n_" + strings.Join(fields, "_")
	return table, [3]string{table + "_i", table + "_u", table + "_d"}
}

// groupKeyExpr is the counts table's key of a document: the JSON array
// of the fields' values as SQLite's ->> gives them, so that null or
// missing (null) and "" stay apart as in a GROUP BY.
func groupKeyExpr(row string, fields []string) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = row + `._ferretdb_sjson->>'$.` + f + `'`
	}
	return "json_array(" + strings.Join(parts, ", ") + ")"
}

// KeepGroupCounts makes the database keep the counts [Lookup.Groups]
// reads for fields of collection coll: it creates the counts table and
// its triggers if missing, and recounts the table from the documents, in
// one write transaction, so that no write falls between the recount and
// the triggers. The primary calls it at start (a GROUP BY over an index:
// about 0.25 s at a million documents); a collection without a table yet
// is left alone, and its groups are counted by GROUP BY.
func (l *Lookup) KeepGroupCounts(ctx context.Context, coll string, fields []string) error {
	if l == nil {
		return nil
	}
	for _, f := range fields {
		if !validField(f) {
			return fmt.Errorf("embeddedmongo: cannot count field %q", f)
		}
	}
	db, t, err := l.writeTable(ctx, coll)
	if db == nil || err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("embeddedmongo: group counts: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("embeddedmongo: group counts: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	cnt, trg := keptNames(t, fields)
	newKey, oldKey := groupKeyExpr("NEW", fields), groupKeyExpr("OLD", fields)
	add := func(key string) string {
		return fmt.Sprintf(`INSERT INTO %q (k, n) VALUES (%s, 1) ON CONFLICT (k) DO UPDATE SET n = n + 1;`, cnt, key)
	}
	sub := func(key string) string {
		return fmt.Sprintf(`UPDATE %q SET n = n - 1 WHERE k = %s;`, cnt, key)
	}
	qs := []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %q (k TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID`, cnt),
		fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %q AFTER INSERT ON %q BEGIN %s END`, trg[0], t, add(newKey)),
		fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %q AFTER UPDATE OF _ferretdb_sjson ON %q WHEN %s IS NOT %s BEGIN %s %s END`,
			trg[1], t, oldKey, newKey, sub(oldKey), add(newKey)),
		fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %q AFTER DELETE ON %q BEGIN %s END`, trg[2], t, sub(oldKey)),
		fmt.Sprintf(`DELETE FROM %q`, cnt),
		fmt.Sprintf(`INSERT INTO %q (k, n) SELECT %s, count(*) FROM %q GROUP BY 1`, cnt, groupKeyExpr(fmt.Sprintf("%q", t), fields), t),
	}
	for _, q := range qs {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("embeddedmongo: group counts of %s: %w", coll, err)
		}
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("embeddedmongo: group counts of %s: %w", coll, err)
	}
	committed = true
	return nil
}

// keptGroups reads the groups of fields on table t from the counts
// [Lookup.KeepGroupCounts] keeps, as Groups orders and limits them;
// false when they are not kept (or no longer: a trigger is missing).
func (l *Lookup) keptGroups(ctx context.Context, db *sql.DB, t string, fields []string, limit int) ([]Group, bool, error) {
	cnt, trg := keptNames(t, fields)
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE (type = 'trigger' AND tbl_name = ? AND name IN (?, ?, ?)) OR (type = 'table' AND name = ?)`,
		t, trg[0], trg[1], trg[2], cnt).Scan(&n)
	if err != nil {
		return nil, false, fmt.Errorf("embeddedmongo: groups: %w", err)
	}
	if n != 4 {
		return nil, false, nil
	}
	cols := make([]string, len(fields))
	for i := range fields {
		cols[i] = fmt.Sprintf("k->>%d", i)
	}
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT k, n FROM %q WHERE n > 0 ORDER BY n DESC, %s LIMIT ?`, cnt, strings.Join(cols, ", ")), limit)
	if err != nil {
		return nil, false, fmt.Errorf("embeddedmongo: groups: %w", err)
	}
	defer rows.Close()
	var out []Group
	for rows.Next() {
		var k string
		var g Group
		if err := rows.Scan(&k, &g.Count); err != nil {
			return nil, false, fmt.Errorf("embeddedmongo: groups: %w", err)
		}
		var vals []*string
		if err := json.Unmarshal([]byte(k), &vals); err != nil || len(vals) != len(fields) {
			// a value that is not a string: the caller's kinds check
			// refuses such collections, so this is not ours to answer
			return nil, false, nil
		}
		for _, v := range vals {
			if v == nil {
				g.Values = append(g.Values, "")
			} else {
				g.Values = append(g.Values, *v)
			}
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("embeddedmongo: groups: %w", err)
	}
	return out, true, nil
}
