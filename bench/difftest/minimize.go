package difftest

import (
	"context"
	"database/sql"
	"slices"
)

// minimize reduces d's case to a smaller one whose answers still differ in
// the same way (and not for a known reason): it replaces an operator by
// one of its operands, or a literal by 0, while that keeps the
// difference, until no such step does.
func minimize(ctx context.Context, certus, ref *sql.DB, d *Diff) (*Diff, error) {
	if d.Case.root == nil {
		return d, nil
	}
	cur := d
	for {
		next := (*Diff)(nil)
		for _, e := range simpler(cur.Case.root) {
			c := cur.Case
			c.root, c.Stmts = e, c.make(e)
			nd, err := check(ctx, certus, ref, c)
			if err != nil {
				return cur, err
			}
			if nd != nil && nd.Kind == d.Kind && nd.Known == "" {
				nd.Seed, nd.Index = d.Seed, d.Index
				next = nd
				break
			}
		}
		if next == nil {
			return cur, nil
		}
		cur = next
	}
}

// simpler lists the expressions one step simpler than e.
func simpler(e *expr) []*expr {
	if e.form == nil {
		if e.text == "0" {
			return nil
		}
		return []*expr{lit("0")}
	}
	out := slices.Clone(e.kids)
	for i, k := range e.kids {
		for _, s := range simpler(k) {
			c := *e
			c.kids = slices.Clone(e.kids)
			c.kids[i] = s
			out = append(out, &c)
		}
	}
	return out
}
