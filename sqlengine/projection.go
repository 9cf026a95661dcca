package sqlengine

import "github.com/dolthub/go-mysql-server/sql"

// Column projections: go-mysql-server prunes the columns a query does not
// need from a table's schema and rows (and shows them in its plans).

var _ sql.ProjectedTable = (*Table)(nil)

// WithProjections implements sql.ProjectedTable.
func (t *Table) WithProjections(ctx *sql.Context, cols []string) (sql.Table, error) {
	nt := *t
	nt.proj = cols
	if _, err := nt.projOrds(); err != nil {
		return nil, err
	}
	return &nt, nil
}

// Projections implements sql.ProjectedTable.
func (t *Table) Projections() []string { return t.proj }

// projOrds are the ordinals of the projected columns in the table's full
// schema (nil: all columns).
func (t *Table) projOrds() ([]int, error) {
	if t.proj == nil {
		return nil, nil
	}
	ords := make([]int, len(t.proj))
	for i, name := range t.proj {
		if ords[i] = t.sch.IndexOfColName(name); ords[i] < 0 {
			return nil, sql.ErrTableColumnNotFound.New(t.def.Name, name)
		}
	}
	return ords, nil
}

// project returns the columns ords of row (a copy of row when ords is
// nil).
func project(row sql.Row, ords []int) sql.Row {
	if ords == nil {
		return row.Copy()
	}
	out := make(sql.Row, len(ords))
	for i, o := range ords {
		out[i] = row[o]
	}
	return out
}
