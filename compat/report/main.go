// Command report summarises `go test -json` output of package compat: per
// engine test suite, the leaf tests that passed, failed and were skipped on
// Certus next to go-mysql-server's memory harness, and the share of the
// tests passing on the memory harness that pass on Certus too (matched by
// name).
//
//	go test -json ./compat | go run ./compat/report
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json output.
type event struct {
	Action string
	Test   string
}

// counts are the leaf test outcomes of one suite on one harness, and the
// names (below the suite) of the tests that passed.
type counts struct {
	pass, fail, skip int
	passed           map[string]bool
}

// harnesses are the top-level tests of package compat, in table order.
var harnesses = []struct{ test, title string }{
	{"TestCertus", "Certus"},
	{"TestMemory", "memory"},
}

func main() {
	results, err := read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	write(os.Stdout, tally(results))
}

// read returns the final action (pass, fail, skip) of every test.
func read(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			out[e.Test] = e.Action
		}
	}
	return out, sc.Err()
}

// tally counts leaf tests (tests without subtests) per harness and suite.
func tally(results map[string]string) map[string]map[string]*counts {
	parent := map[string]bool{}
	for name := range results {
		for i := strings.LastIndexByte(name, '/'); i > 0; i = strings.LastIndexByte(name[:i], '/') {
			parent[name[:i]] = true
		}
	}
	out := map[string]map[string]*counts{}
	for name, action := range results {
		parts := strings.SplitN(name, "/", 3)
		if parent[name] || len(parts) < 2 {
			continue
		}
		bySuite := out[parts[0]]
		if bySuite == nil {
			bySuite = map[string]*counts{}
			out[parts[0]] = bySuite
		}
		c := bySuite[parts[1]]
		if c == nil {
			c = &counts{passed: map[string]bool{}}
			bySuite[parts[1]] = c
		}
		switch action {
		case "pass":
			c.pass++
			c.passed[strings.TrimPrefix(name, parts[0]+"/"+parts[1])] = true
		case "fail":
			c.fail++
		case "skip":
			c.skip++
		}
	}
	return out
}

func write(w io.Writer, t map[string]map[string]*counts) {
	suites := map[string]bool{}
	for _, bySuite := range t {
		for s := range bySuite {
			suites[s] = true
		}
	}
	names := make([]string, 0, len(suites))
	for s := range suites {
		names = append(names, s)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "| suite | Certus pass | fail | skip | memory pass | fail | skip | memory's passes Certus passes |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|")
	var total [2]counts
	both := 0
	for _, s := range names {
		var row [2]counts
		for i, h := range harnesses {
			if c := t[h.test][s]; c != nil {
				row[i] = *c
			}
			total[i].pass += row[i].pass
			total[i].fail += row[i].fail
			total[i].skip += row[i].skip
		}
		n := 0
		for name := range row[1].passed {
			if row[0].passed[name] {
				n++
			}
		}
		both += n
		fmt.Fprintf(w, "| %s | %s | %s |\n", s, cells(row), ratio(n, row[1].pass))
	}
	fmt.Fprintf(w, "| **total** | %s | %s |\n", cells(total), ratio(both, total[1].pass))
}

func cells(r [2]counts) string {
	return fmt.Sprintf("%d | %d | %d | %d | %d | %d", r[0].pass, r[0].fail, r[0].skip, r[1].pass, r[1].fail, r[1].skip)
}

// ratio is n of the memory harness's passes as a share.
func ratio(n, memory int) string {
	if memory == 0 {
		return "–"
	}
	return fmt.Sprintf("%d (%.1f%%)", n, 100*float64(n)/float64(memory))
}
