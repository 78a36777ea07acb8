package main

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// notMeasured is what a row says when no run has measured it: a row newly
// added, or one whose benchmark ran and no longer reports its metric.
const notMeasured = "not measured yet"

// cells are one row of the table as written: component, figure, target,
// measured, same-run baseline, verdict, and the run that measured it.
type cells [7]string

// key names a row across runs: a row whose figure or target is reworded is
// a new row, and the figure measured against the old one is not kept.
func key(component, figure, target string) string {
	return component + "\x00" + figure + "\x00" + target
}

// docTable is the table the document holds: its rows by key, and the runs
// its header lists, by id.
type docTable struct {
	rows  map[string]cells
	order []string // keys, in the document's order
	runs  map[string]string
}

// oldHeader is the header make bench wrote before the table said which run
// measured each row: one run measured them all.
var oldHeader = regexp.MustCompile("^Written by `make bench` on (\\S+ \\S+ UTC), commit (\\S+), (\\S+), (\\d+) cores" +
	"(?:; load average at the start ([\\d. ]+?))?(?:; load average at the end ([\\d. ]+?))?\\. ")

// readTable reads the table between the summary markers (none: empty).
func readTable(doc string) (docTable, error) {
	t := docTable{rows: map[string]cells{}, runs: map[string]string{}}
	i := strings.Index(doc, beginMarker)
	if i < 0 {
		return t, nil
	}
	j := strings.Index(doc, endMarker)
	if j < i {
		return t, errors.New("the summary's end marker is missing or before its start")
	}
	oldRun := ""
	for _, line := range strings.Split(doc[i+len(beginMarker):j], "\n") {
		switch {
		case oldHeader.MatchString(line):
			m := oldHeader.FindStringSubmatch(line)
			oldRun = m[1] + ", " + m[2]
			t.runs[oldRun] = fmt.Sprintf("`make bench`, %s, %s cores; load average at the start %s, at the end %s",
				m[3], m[4], orUnknown(m[5]), orUnknown(m[6]))
		case strings.HasPrefix(line, "- "):
			if id, about, ok := strings.Cut(line[2:], ": "); ok {
				t.runs[id] = about
			}
		case strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| component |"):
			c, err := readRow(line, oldRun)
			if err != nil {
				return t, err
			}
			k := key(c[0], c[1], c[2])
			t.rows[k] = c
			t.order = append(t.order, k)
		}
	}
	return t, nil
}

// readRow reads one row: seven cells, or six (the table before runs were
// named; oldRun measured them).
func readRow(line, oldRun string) (cells, error) {
	f := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
	var c cells
	switch len(f) {
	case 7:
		copy(c[:], f)
	case 6:
		copy(c[:], f)
		c[6] = oldRun
	default:
		return c, fmt.Errorf("a summary row with %d cells, not 6 or 7: %s", len(f), line)
	}
	return c, nil
}

// point is one run's figures for a row.
type point struct {
	v, base       float64
	hasV, hasBase bool
	failed        bool
	runID         string
}

// measure takes a row's figures from every run that ran its benchmark.
func (row row) measure(runs []*benchRun) []point {
	var out []point
	for _, run := range runs {
		p := point{runID: run.id(), failed: row.measured.failed(run.res), base: math.NaN()}
		if _, ran := run.res[row.measured.pkg+":"+row.measured.bench]; !ran && !p.failed {
			continue // not this run's: the row keeps what it had
		}
		p.v, p.hasV = row.measured.get(run.res)
		if row.base != nil {
			if b, ok := row.base.get(run.res); ok {
				p.base, p.hasBase = b, true
			}
		}
		out = append(out, p)
	}
	return out
}

// refresh writes a row from the runs that measured it. A target holds only
// if it holds in every run (the same-run baseline of each).
func (row row) refresh(pts []point) cells {
	c := cells{row.component, row.figure, row.target, notMeasured, "—", "—", runIDs(pts)}
	var vs, bases []float64
	verdict, failed := "met", 0
	for _, p := range pts {
		if p.failed {
			failed++
		}
		if p.hasBase {
			bases = append(bases, p.base)
		}
		if !p.hasV {
			continue
		}
		vs = append(vs, p.v)
		switch {
		case row.base != nil && !p.hasBase && strings.Contains(row.target, "×"):
			if verdict == "met" {
				verdict = "— (no baseline)"
			}
		case !row.ok(p.v, p.base):
			verdict = "missed"
		}
	}
	if row.base != nil {
		c[4] = row.baseName + ": not run"
		if len(bases) > 0 {
			c[4] = row.baseName + ": " + spread(row.baseShowOrShow(), bases)
		}
	}
	switch {
	case len(vs) > 0:
		c[3], c[5] = spread(row.show, vs), verdict
		if failed > 0 {
			c[3] += fmt.Sprintf("; the benchmark failed in %d of %d runs", failed, len(pts))
			c[5] = "missed"
		}
	case failed > 0:
		c[3], c[5] = "benchmark failed", "missed"
	}
	return c
}

func (row row) baseShowOrShow() string {
	if row.baseShow != "" {
		return row.baseShow
	}
	return row.show
}

// spread is one run's value, or the median of several with their range.
func spread(show string, vs []float64) string {
	if len(vs) == 1 {
		return fmt.Sprintf(show, vs[0])
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf(show+" (median of %d runs; "+show+" to "+show+")", med, len(s), s[0], s[len(s)-1])
}

func runIDs(pts []point) string {
	var ids []string
	for _, p := range pts {
		if !slices.Contains(ids, p.runID) {
			ids = append(ids, p.runID)
		}
	}
	return strings.Join(ids, "; ")
}

// summary is the new table: each row refreshed from the runs that ran its
// benchmark, kept as the document has it when none did, or not measured
// yet. dropped are the document's rows that no row of rows names any more.
func summary(runs []*benchRun, old docTable) (tbl string, dropped []string) {
	var body strings.Builder
	used := map[string]bool{}
	current := map[string]bool{}
	for _, row := range rows {
		k := key(row.component, row.figure, row.target)
		current[k] = true
		c, kept := old.rows[k]
		if pts := row.measure(runs); len(pts) > 0 {
			c = row.refresh(pts)
		} else if !kept {
			c = cells{row.component, row.figure, row.target, notMeasured, "—", "—", "—"}
			if row.base != nil {
				c[4] = row.baseName + ": " + notMeasured
			}
		}
		for _, id := range strings.Split(c[6], "; ") {
			used[id] = true
		}
		fmt.Fprintf(&body, "| %s |\n", strings.Join(c[:], " | "))
	}
	for _, k := range old.order {
		if !current[k] {
			dropped = append(dropped, strings.ReplaceAll(k, "\x00", " | "))
		}
	}
	return beginMarker + "\n" + header(runs, old, used) +
		"| component | figure | target | measured | same-run baseline | verdict | run |\n|---|---|---|---|---|---|---|\n" +
		body.String() + endMarker + "\n", dropped
}

// header says how the table is made and lists every run a row names.
func header(runs []*benchRun, old docTable, used map[string]bool) string {
	about := map[string]string{}
	for id, a := range old.runs {
		about[id] = a
	}
	for _, r := range runs {
		about[r.id()] = r.about()
	}
	var ids []string
	for id := range used {
		if id != "—" && id != "" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var b strings.Builder
	b.WriteString("Written by test/bench/summary from the output of `make bench`, which runs every benchmark, or of " +
		"`make bench BENCH_PKGS=… BENCH_RUN=…`, which runs some and refreshes only their rows: every other row keeps " +
		"the figure of the run named in its last column, and a row no run has measured says so. Each figure is its run's own " +
		"(a median where the benchmark runs rounds; where several runs measured it, their median and range, and met only if " +
		"every run met it); each baseline ran in the same run, on the same machine. The sections below have the spreads, " +
		"commands and history.\n\nRuns:\n\n")
	for _, id := range ids {
		a, ok := about[id]
		if !ok {
			a = "not recorded"
		}
		fmt.Fprintf(&b, "- %s: %s\n", id, a)
	}
	b.WriteString("\n")
	return b.String()
}

// splice puts the table into the document: in place of the previous one,
// or after the first paragraph under the title.
func splice(doc []byte, tbl string) ([]byte, error) {
	s := string(doc)
	if i := strings.Index(s, beginMarker); i >= 0 {
		j := strings.Index(s, endMarker)
		if j < i {
			return nil, errors.New("the summary's end marker is missing or before its start")
		}
		return []byte(s[:i] + tbl + s[j+len(endMarker)+1:]), nil
	}
	i := strings.Index(s, "\n## ")
	if i < 0 {
		return nil, errors.New("no section to put the summary before")
	}
	return []byte(s[:i+1] + "## Summary of `make bench`\n\n" + tbl + "\n" + s[i+1:]), nil
}
