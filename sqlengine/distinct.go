package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/hash"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// SELECT DISTINCT (and UNION, which is a DISTINCT over UNION ALL) compares
// rows by their columns' collations, as GROUP BY already did:
// go-mysql-server hashed the raw values, so with the default
// utf8mb4_0900_ai_ci 'Apple' and 'apple' were two rows where MySQL
// returns one.

// collatedDistinct builds n (a DISTINCT without DISTINCT ON) over its
// child's rows, built by base.
func collatedDistinct(ctx *sql.Context, base sql.NodeExecBuilder, n *plan.Distinct, row sql.Row) (sql.RowIter, error) {
	it, err := base.Build(ctx, n.Child, row)
	if err != nil {
		return nil, err
	}
	return &collatedRows{child: it, sch: n.Child.Schema(ctx), seen: map[uint64]struct{}{}}, nil
}

// collatedRows passes each row whose hash under the schema's collations
// it has not seen.
type collatedRows struct {
	child sql.RowIter
	sch   sql.Schema
	seen  map[uint64]struct{}
}

// Next implements sql.RowIter.
func (d *collatedRows) Next(ctx *sql.Context) (sql.Row, error) {
	for {
		row, err := d.child.Next(ctx)
		if err != nil {
			return nil, err
		}
		h, err := hash.HashOf(ctx, d.sch, row)
		if err != nil {
			return nil, err
		}
		if _, dup := d.seen[h]; dup {
			continue
		}
		d.seen[h] = struct{}{}
		return row, nil
	}
}

// Close implements sql.RowIter.
func (d *collatedRows) Close(ctx *sql.Context) error {
	d.seen = nil
	return d.child.Close(ctx)
}
