package difftest

import (
	"context"
	"database/sql"
	"fmt"
)

// Recorded is a generated case with the reference server's answers, so
// that Certus can be compared with them where no reference server runs
// (the fixed-seed pass in go test).
type Recorded struct {
	Class   string   `json:"class"`
	Mode    string   `json:"sql_mode"`
	Setup   []string `json:"setup,omitempty"`
	Stmts   []string `json:"stmts"`
	Answers []Answer `json:"answers"`
}

// Record generates opts.PerClass cases of each class from opts.Seed and
// returns them with ref's answers.
func Record(ctx context.Context, ref *sql.DB, opts Options) ([]Recorded, error) {
	var out []Recorded
	for _, class := range opts.Classes {
		g := newGen(opts.Seed ^ hashString(class))
		for i := 0; i < opts.PerClass; i++ {
			c := g.next(class)
			a, err := run(ctx, ref, c)
			if err != nil {
				return out, fmt.Errorf("%s case %d (seed %d): %w", class, i, opts.Seed, err)
			}
			out = append(out, Recorded{Class: c.Class, Mode: c.Mode, Setup: c.Setup, Stmts: c.Stmts, Answers: a})
		}
	}
	return out, nil
}

// Replay runs the recorded cases on certus and reports, per class, how its
// answers differ from the recorded ones (without minimizing).
func Replay(ctx context.Context, certus *sql.DB, recs []Recorded) ([]*ClassReport, error) {
	var reports []*ClassReport
	byClass := map[string]*ClassReport{}
	for i, rec := range recs {
		r := byClass[rec.Class]
		if r == nil {
			r = newClassReport(rec.Class)
			byClass[rec.Class] = r
			reports = append(reports, r)
		}
		c := Case{Class: rec.Class, Mode: rec.Mode, Setup: rec.Setup, Stmts: rec.Stmts}
		a, err := run(ctx, certus, c)
		if err != nil {
			return reports, fmt.Errorf("recorded case %d: %w", i, err)
		}
		d := diffAnswers(c, a, rec.Answers)
		if r.add(d) {
			d.Index = i
			r.Samples = append(r.Samples, d)
		}
	}
	return reports, nil
}
