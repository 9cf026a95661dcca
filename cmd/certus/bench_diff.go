package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/bench"
	"github.com/certusdb/certus/bench/difftest"
)

func benchDiffCmd() *cobra.Command {
	var anchors, classes, record string
	var seed uint64
	var perClass, samples int
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "run the same generated SQL on one Certus node and on MariaDB and report what differs",
		Long: `Start one Certus node (from this binary) and the plain MariaDB of the anchor
scripts (single.sh), generate --cases statements of each class from --seed
(expr: SELECT of expressions over built-in functions, operators and casts
with edge values; values: the same expressions stored into a column of
each type, by INSERT and UPDATE, and read back), each in one of three
sql_modes, run each on both servers and compare the result values, column
types, error codes, affected rows and warnings. Prints per class how many
cases answered alike, the differences by kind, the known ones by reason
(bench/difftest/known.go), and examples reduced to a smaller statement
that still differs. The same seed generates the same cases.

With --record FILE it starts MariaDB only and writes the cases with
MariaDB's answers to FILE (JSON): systest's TestDiffRecorded replays
bench/difftest/testdata/seed1.json on a Certus node in go test.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !bench.AnchorsAvailable(anchors) {
				return fmt.Errorf("MariaDB or the anchor scripts (%s) are not installed: install them with %s/install.sh", anchors, anchors)
			}
			self, unlock, err := benchStart()
			if err != nil {
				return err
			}
			defer unlock()
			opts := difftest.Options{Seed: seed, PerClass: perClass, Classes: strings.Split(classes, ","), Samples: samples, Progress: progress}
			if record != "" {
				return recordDiffCases(anchors, record, opts)
			}
			progress("starting certus...")
			c, err := bench.StartCertus(self, 1)
			if err != nil {
				return err
			}
			defer c.Stop()
			certus, err := bench.Open(c.Targets()[0])
			if err != nil {
				return err
			}
			defer certus.Close()
			ref, stop, err := startReference(anchors)
			if err != nil {
				return err
			}
			defer stop()
			reports, err := difftest.Run(context.Background(), certus, ref, opts)
			printDiffReports(reports, seed)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&anchors, "anchors", defaultAnchors, "directory of the Galera/MariaDB anchor scripts")
	f.StringVar(&classes, "classes", strings.Join(difftest.Classes, ","), "comma-separated classes")
	f.Uint64Var(&seed, "seed", 1, "seed of the generated cases")
	f.IntVar(&perClass, "cases", 2000, "cases per class")
	f.IntVar(&samples, "samples", 3, "differences of each kind reduced and printed, per class")
	f.StringVar(&record, "record", "", "write the cases with MariaDB's answers to this file instead of comparing")
	return cmd
}

// recordDiffCases writes the cases of opts with the answers of the
// anchors' MariaDB to file.
func recordDiffCases(anchors, file string, opts difftest.Options) error {
	ref, stop, err := startReference(anchors)
	if err != nil {
		return err
	}
	defer stop()
	recs, err := difftest.Record(context.Background(), ref, opts)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(recs, "", " ")
	if err != nil {
		return err
	}
	progress("%d cases with MariaDB's answers in %s", len(recs), file)
	return os.WriteFile(file, append(data, '\n'), 0o644)
}

// startReference starts the anchors' MariaDB and opens its sbtest
// database; stop closes and stops both.
func startReference(anchors string) (ref *sql.DB, stop func(), err error) {
	progress("starting MariaDB (anchors single.sh)...")
	m, err := bench.StartMariaDB(anchors)
	if err != nil {
		return nil, nil, err
	}
	if ref, err = bench.Open(m.Targets()[0]); err != nil {
		m.Stop()
		return nil, nil, err
	}
	return ref, func() { ref.Close(); m.Stop() }, nil
}

// printDiffReports prints the counts of each class and its examples.
func printDiffReports(reports []*difftest.ClassReport, seed uint64) {
	h := []string{"class", "cases", "alike"}
	h = append(h, difftest.Kinds...)
	h = append(h, "known")
	var rows [][]string
	for _, r := range reports {
		row := []string{r.Class, fmt.Sprint(r.Cases), fmt.Sprint(r.Same)}
		for _, k := range difftest.Kinds {
			row = append(row, fmt.Sprint(r.ByKind[k]))
		}
		known := 0
		for _, n := range r.Known {
			known += n
		}
		rows = append(rows, append(row, fmt.Sprint(known)))
	}
	fmt.Printf("\nCertus against MariaDB, seed %d: cases answered alike and differences by kind\n\n%s", seed, bench.Table(h, rows))
	for _, r := range reports {
		for reason, n := range r.Known {
			fmt.Printf("\n%s: %d known: %s", r.Class, n, reason)
		}
		for _, d := range r.Samples {
			fmt.Printf("\n%s, %s (case %d): sql_mode '%s'\n", r.Class, d.Kind, d.Index, d.Case.Mode)
			for _, q := range d.Case.Setup {
				fmt.Printf("  %s;\n", q)
			}
			for i, q := range d.Case.Stmts[:d.Stmt+1] {
				mark := ""
				if i == d.Stmt {
					mark = "   <-"
				}
				fmt.Printf("  %s;%s\n", q, mark)
			}
			fmt.Printf("    certus:  %s\n    mariadb: %s\n", describeAnswer(d.Certus), describeAnswer(d.Ref))
		}
	}
	fmt.Println()
	_ = os.Stdout.Sync()
}

// describeAnswer is an answer on one line.
func describeAnswer(a difftest.Answer) string {
	var b strings.Builder
	if a.Err != 0 {
		fmt.Fprintf(&b, "error %d %s", a.Err, a.ErrText)
	} else {
		fmt.Fprintf(&b, "%v", a.Types)
		for _, r := range a.Rows {
			b.WriteString(" (")
			for i, v := range r {
				if i > 0 {
					b.WriteString(", ")
				}
				if v == nil {
					b.WriteString("NULL")
				} else {
					fmt.Fprintf(&b, "%q", *v)
				}
			}
			b.WriteString(")")
		}
		if a.Affected != 0 {
			fmt.Fprintf(&b, " affected %d", a.Affected)
		}
	}
	for _, w := range a.Warnings {
		fmt.Fprintf(&b, " [%s]", w)
	}
	return b.String()
}
