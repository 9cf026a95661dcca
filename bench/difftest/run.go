package difftest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Answer is what a server answered to one statement.
type Answer struct {
	Err      uint16      `json:"err,omitempty"` // the MySQL error code, 0 for none
	ErrText  string      `json:"err_text,omitempty"`
	Types    []string    `json:"types,omitempty"` // the result's column types
	Rows     [][]*string `json:"rows,omitempty"`  // the result's values (nil: NULL)
	Affected int64       `json:"affected,omitempty"`
	Warnings []Warning   `json:"warnings,omitempty"`
}

// Warning is one row of SHOW WARNINGS.
type Warning struct {
	Level string `json:"level"`
	Code  uint16 `json:"code"`
	Text  string `json:"text"`
}

func (w Warning) String() string { return fmt.Sprintf("%s %d %s", w.Level, w.Code, w.Text) }

// Difference kinds, from the most to the least serious.
const (
	KindError     = "error"      // one server answered an error, the other did not
	KindErrorCode = "error code" // both answered errors, with different codes
	KindValue     = "value"      // the results' values differ
	KindType      = "type"       // the results' column types differ
	KindAffected  = "affected"   // the affected-row counts differ
	KindWarning   = "warning"    // the warnings' levels or codes differ
	KindWarnText  = "warning text"
)

// Kinds lists the kinds in order.
var Kinds = []string{KindError, KindErrorCode, KindValue, KindType, KindAffected, KindWarning, KindWarnText}

// compare returns how b differs from a, or "".
func compare(a, b Answer) string {
	switch {
	case (a.Err == 0) != (b.Err == 0):
		return KindError
	case a.Err != b.Err:
		return KindErrorCode
	case !slices.EqualFunc(a.Rows, b.Rows, func(x, y []*string) bool {
		return slices.EqualFunc(x, y, func(p, q *string) bool { return (p == nil) == (q == nil) && (p == nil || *p == *q) })
	}):
		return KindValue
	case !slices.Equal(a.Types, b.Types):
		return KindType
	case a.Affected != b.Affected:
		return KindAffected
	case !slices.EqualFunc(a.Warnings, b.Warnings, func(x, y Warning) bool { return x.Level == y.Level && x.Code == y.Code }):
		return KindWarning
	case !slices.Equal(a.Warnings, b.Warnings):
		return KindWarnText
	}
	return ""
}

// statementTimeout bounds each statement on each server.
const statementTimeout = 10 * time.Second

// run runs c on a new session of db and returns the answers to its
// statements.
func run(ctx context.Context, db *sql.DB, c Case) ([]Answer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	// a session of its own: a statement that uses no table keeps the
	// warnings of the one before (MySQL's rule), which would be another
	// case's
	defer func() {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	}()
	setup := append([]string{"SET SESSION sql_mode = '" + c.Mode + "'"}, c.Setup...)
	for _, q := range setup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	var out []Answer
	for _, q := range c.Stmts {
		a, err := answer(ctx, conn, q)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// answer runs q on conn. The error is the connection's, not q's.
func answer(ctx context.Context, conn *sql.Conn, q string) (Answer, error) {
	var a Answer
	sctx, cancel := context.WithTimeout(ctx, statementTimeout)
	defer cancel()
	var err error
	if strings.HasPrefix(q, "SELECT") {
		err = query(sctx, conn, q, &a)
	} else {
		var res sql.Result
		if res, err = conn.ExecContext(sctx, q); err == nil {
			a.Affected, _ = res.RowsAffected()
		}
	}
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me):
		a.Err, a.ErrText = me.Number, me.Message
	case err != nil:
		return a, err
	}
	rows, err := conn.QueryContext(ctx, "SHOW WARNINGS")
	if err != nil {
		return a, err
	}
	defer rows.Close()
	for rows.Next() {
		var w Warning
		if err := rows.Scan(&w.Level, &w.Code, &w.Text); err != nil {
			return a, err
		}
		a.Warnings = append(a.Warnings, w)
	}
	return a, rows.Err()
}

func query(ctx context.Context, conn *sql.Conn, q string, a *Answer) error {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	for _, t := range types {
		a.Types = append(a.Types, t.DatabaseTypeName())
	}
	for rows.Next() {
		raw := make([]sql.RawBytes, len(types))
		dest := make([]any, len(raw))
		for i := range raw {
			dest[i] = &raw[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		row := make([]*string, len(raw))
		for i, b := range raw {
			if b != nil {
				s := string(b)
				row[i] = &s
			}
		}
		a.Rows = append(a.Rows, row)
	}
	return rows.Err()
}

// Diff is one case whose answers differ.
type Diff struct {
	Case   Case
	Stmt   int    // the first statement whose answers differ
	Kind   string // how they differ
	Known  string // why, when the difference is an intended one
	Seed   uint64
	Index  int // the case's number in its class under Seed
	Certus Answer
	Ref    Answer
}

// check runs c on both servers and returns the first difference, or nil.
func check(ctx context.Context, certus, ref *sql.DB, c Case) (*Diff, error) {
	a, err := run(ctx, certus, c)
	if err != nil {
		return nil, fmt.Errorf("certus: %w", err)
	}
	b, err := run(ctx, ref, c)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	return diffAnswers(c, a, b), nil
}

// diffAnswers returns the first difference between Certus's answers to c
// (a) and the reference's (b), or nil.
func diffAnswers(c Case, a, b []Answer) *Diff {
	for i := range a {
		if i >= len(b) {
			break
		}
		if k := compare(b[i], a[i]); k != "" {
			d := &Diff{Case: c, Stmt: i, Kind: k, Certus: a[i], Ref: b[i]}
			d.Known = known(d)
			return d
		}
	}
	return nil
}

// ClassReport counts one class's cases and differences.
type ClassReport struct {
	Class   string
	Cases   int
	Same    int
	ByKind  map[string]int // unexplained differences by kind
	Known   map[string]int // intended differences by reason
	Samples []*Diff        // the first differences of each kind, minimized
}

func newClassReport(class string) *ClassReport {
	return &ClassReport{Class: class, ByKind: map[string]int{}, Known: map[string]int{}}
}

// add counts a case whose first difference is d (nil: none) and reports
// whether d is an unexplained one.
func (r *ClassReport) add(d *Diff) bool {
	r.Cases++
	switch {
	case d == nil:
		r.Same++
	case d.Known != "":
		r.Known[d.Known]++
	default:
		r.ByKind[d.Kind]++
		return true
	}
	return false
}

// Options are a run's settings.
type Options struct {
	Seed     uint64
	PerClass int
	Classes  []string
	// Samples is how many differences of each kind are minimized and kept.
	Samples  int
	Progress func(format string, args ...any)
}

// Run generates opts.PerClass cases of each class from opts.Seed, runs
// each on both servers (certus and ref, on databases of the same name)
// and reports the differences.
func Run(ctx context.Context, certus, ref *sql.DB, opts Options) ([]*ClassReport, error) {
	var reports []*ClassReport
	for _, class := range opts.Classes {
		r := newClassReport(class)
		g := newGen(opts.Seed ^ hashString(class))
		samples := map[string]int{}
		for i := 0; i < opts.PerClass; i++ {
			if ctx.Err() != nil {
				return reports, ctx.Err()
			}
			c := g.next(class)
			d, err := check(ctx, certus, ref, c)
			if err != nil {
				return reports, fmt.Errorf("%s case %d (seed %d): %w", class, i, opts.Seed, err)
			}
			if r.add(d) && samples[d.Kind] < opts.Samples {
				samples[d.Kind]++
				d.Seed, d.Index = opts.Seed, i
				if m, err := minimize(ctx, certus, ref, d); err == nil {
					d = m
				}
				r.Samples = append(r.Samples, d)
			}
			if opts.Progress != nil && (i+1)%500 == 0 {
				opts.Progress("%s: %d of %d cases, %d differ", class, i+1, opts.PerClass, i+1-r.Same)
			}
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// hashString is FNV-1a of s: each class draws from its own stream.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}
