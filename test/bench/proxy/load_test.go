package proxybench

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// wrkResult is what one wrk run reported.
type wrkResult struct {
	requests       int
	seconds        float64
	p50, p99       time.Duration
	non2xx, errors int
}

func (r wrkResult) rps() float64 { return float64(r.requests) / r.seconds }

var (
	reRequests = regexp.MustCompile(`(\d+) requests in ([\d.]+)(us|ms|s|m)`)
	reLatency  = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s)`)
	reNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	reSocket   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

func unit(v float64, u string) time.Duration {
	switch u {
	case "us":
		return time.Duration(v * float64(time.Microsecond))
	case "ms":
		return time.Duration(v * float64(time.Millisecond))
	case "m":
		return time.Duration(v * float64(time.Minute))
	}
	return time.Duration(v * float64(time.Second))
}

// runWrk runs wrk -t2 -c<conns> -d<d> --latency with the users' script.
func runWrk(url, script string, conns int, d time.Duration) (wrkResult, string, error) {
	out, err := exec.Command("wrk", "-t2", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", int(d.Seconds())),
		"--latency", "-s", script, url).CombinedOutput()
	text := string(out)
	if err != nil {
		return wrkResult{}, text, fmt.Errorf("wrk: %w\n%s", err, text)
	}
	var r wrkResult
	m := reRequests.FindStringSubmatch(text)
	if m == nil {
		return r, text, fmt.Errorf("wrk printed no request count:\n%s", text)
	}
	r.requests, _ = strconv.Atoi(m[1])
	v, _ := strconv.ParseFloat(m[2], 64)
	r.seconds = unit(v, m[3]).Seconds()
	for _, l := range reLatency.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(l[2], 64)
		if l[1] == "50" {
			r.p50 = unit(v, l[3])
		} else {
			r.p99 = unit(v, l[3])
		}
	}
	if m := reNon2xx.FindStringSubmatch(text); m != nil {
		r.non2xx, _ = strconv.Atoi(m[1])
	}
	if m := reSocket.FindStringSubmatch(text); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			r.errors += n
		}
	}
	return r, text, nil
}

// stats are the minimum, median and maximum of a figure over rounds.
func stats(xs []float64) (lo, med, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}

func fmtStats(xs []float64, format string) string {
	lo, med, hi := stats(xs)
	return fmt.Sprintf(format+" / "+format+" / "+format, lo, med, hi)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}
