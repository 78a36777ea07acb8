package main

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Run lines: make bench (and anyone who runs benchmarks for the table) writes
// one before and one after the `go test -bench` output, so that the summary
// knows when the run was, at which commit and load:
//
//	# gatehouse-bench start: 2026-11-28T10:20:01Z commit=7128e4c go=go1.26.8 cores=2 load=1.64/1.61/2.05
//	# gatehouse-bench command: make bench BENCH_PKGS=./test/bench/proxy/ BENCH_RUN=ProxyLoad
//	... go test -bench output ...
//	# gatehouse-bench end: 2026-11-28T10:24:40Z load=2.10/1.80/2.01
//
// An input may hold several runs (a start line begins the next); output
// before any start line is a run of its own, described from what the
// summary sees when it runs (the -load-start flag, HEAD, its go version).
const (
	startPrefix   = "# gatehouse-bench start: "
	commandPrefix = "# gatehouse-bench command: "
	endPrefix     = "# gatehouse-bench end: "
)

// benchRun is one run of benchmarks: its results and what the table's
// header says about it.
type benchRun struct {
	when                 time.Time
	commit, goVersion    string
	cores                int
	loadStart, loadEnd   string // "1.64 1.61 2.05"; empty when not known
	command              string
	res                  results
	parser               *benchParser
	sawStart, sawResults bool
	seq                  int // > 1: the seq-th run with the same minute and commit
}

// id is how a row names the run that measured it, and the start of the
// run's line in the header.
func (r *benchRun) id() string {
	id := r.when.UTC().Format("2006-01-02 15:04 UTC") + ", " + r.commit
	if r.seq > 1 {
		id += fmt.Sprintf(" (%d)", r.seq)
	}
	return id
}

// about is the rest of the run's line in the header.
func (r *benchRun) about() string {
	var b strings.Builder
	fmt.Fprintf(&b, "`%s`, %s", r.command, r.goVersion)
	if r.cores > 0 {
		fmt.Fprintf(&b, ", %d cores", r.cores)
	}
	fmt.Fprintf(&b, "; load average at the start %s, at the end %s", orUnknown(r.loadStart), orUnknown(r.loadEnd))
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

// fallback describes a run whose input has no start line.
type fallback struct {
	now       time.Time
	commit    string
	loadStart string // /proc/loadavg when the run started (make bench's -load-start)
	loadEnd   string
}

// readRuns reads `go test -bench` output with its run lines. A run without
// results (a start line and nothing measured) is left out.
func readRuns(r io.Reader, fb fallback) ([]*benchRun, error) {
	var runs []*benchRun
	cur := newRun(fb)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, startPrefix):
			if cur.sawResults || cur.sawStart {
				runs = append(runs, cur)
			}
			cur = newRun(fb)
			if err := cur.start(strings.TrimPrefix(line, startPrefix)); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, commandPrefix):
			cur.command = strings.TrimSpace(strings.TrimPrefix(line, commandPrefix))
		case strings.HasPrefix(line, endPrefix):
			fields := keyValues(strings.TrimPrefix(line, endPrefix))
			cur.loadEnd = fields["load"]
		default:
			if cur.parser.line(line) {
				cur.sawResults = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	runs = append(runs, cur)
	var out []*benchRun
	for _, run := range runs {
		run.res = run.parser.out
		if len(run.res) > 0 {
			out = append(out, run)
		}
	}
	return out, nil
}

func newRun(fb fallback) *benchRun {
	return &benchRun{
		when: fb.now, commit: fb.commit, goVersion: runtime.Version(), cores: runtime.NumCPU(),
		loadStart: fb.loadStart, loadEnd: fb.loadEnd,
		command: "go test -bench (the input has no run lines)",
		parser:  newParser(),
	}
}

// start reads a start line: the time, then key=value fields.
func (r *benchRun) start(s string) error {
	when, rest, _ := strings.Cut(strings.TrimSpace(s), " ")
	t, err := time.Parse(time.RFC3339, when)
	if err != nil {
		return fmt.Errorf("run line %q: %w", startPrefix+s, err)
	}
	r.when, r.sawStart = t, true
	f := keyValues(rest)
	r.commit = f["commit"]
	if r.commit == "" {
		r.commit = "unknown commit"
	}
	r.goVersion = f["go"]
	r.cores, _ = strconv.Atoi(f["cores"])
	r.loadStart, r.loadEnd = f["load"], ""
	r.command = "a command not recorded"
	return nil
}

// keyValues reads "k=v k=v" fields; a load's "a/b/c" reads as "a b c".
func keyValues(s string) map[string]string {
	out := map[string]string{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		if k == "load" {
			v = strings.ReplaceAll(v, "/", " ")
		}
		out[k] = v
	}
	return out
}

// headCommit is the short commit of HEAD, with -dirty when the work tree
// differs from it.
func headCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown commit"
	}
	c := strings.TrimSpace(string(out))
	if err := exec.Command("git", "diff", "--quiet", "HEAD").Run(); err != nil {
		c += "-dirty"
	}
	return c
}

// loadAvg is the first three fields of /proc/loadavg's text.
func loadAvg(raw string) string {
	f := strings.Fields(raw)
	return strings.Join(f[:min(3, len(f))], " ")
}
