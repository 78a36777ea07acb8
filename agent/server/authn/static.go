package authn

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// staticUserPrefix starts the Username of a static token's Identity.
const staticUserPrefix = "static:"

// reloadCheckInterval is how often a watched file is stat'ed at most.
const reloadCheckInterval = time.Second

// tokenTable maps the SHA-256 of a token to the agent id it stands for, so
// lookups never compare tokens byte by byte and the table holds no secret.
type tokenTable map[[32]byte]string

func (t tokenTable) authenticate(token string) (*Identity, error) {
	if token == "" {
		return nil, refused("empty token")
	}
	id, ok := t[sha256.Sum256([]byte(token))]
	if !ok {
		return nil, refused("unknown static token")
	}
	return &Identity{Username: staticUserPrefix + id, AgentID: id}, nil
}

// NewStaticTokens returns an Authenticator that accepts exactly the given
// tokens, each mapped to its agent id: what --agent-static-token-file gives a
// controller with no cluster to ask (--source dir:, gatehouse dev), and tests.
func NewStaticTokens(tokens map[string]string) Authenticator {
	t := make(tokenTable, len(tokens))
	for tok, id := range tokens {
		t[sha256.Sum256([]byte(tok))] = id
	}
	return t
}

func (t tokenTable) Authenticate(_ context.Context, token string) (*Identity, error) {
	return t.authenticate(token)
}

// StaticTokenFile authenticates agents by a file of static tokens, re-read
// when it changes (checked at most once a second, on use). If a new version
// of the file cannot be parsed, the last good one stays in force.
//
// The file has one "TOKEN AGENT-ID" pair per line, separated by white space;
// blank lines and lines starting with # are ignored. A token may appear once;
// an agent id may have several tokens (to rotate them).
type StaticTokenFile struct {
	path string
	o    options

	mu        sync.Mutex
	table     tokenTable
	tried     fileStamp // the version of the file last read, good or bad
	lastCheck time.Time
}

// NewStaticTokenFile reads path; it fails if the file is missing or malformed.
func NewStaticTokenFile(path string, opts ...Option) (*StaticTokenFile, error) {
	a := &StaticTokenFile{path: path, o: buildOptions(opts)}
	stamp, err := statFile(path)
	if err != nil {
		return nil, fmt.Errorf("read static token file: %w", err)
	}
	table, err := readTokenFile(path)
	if err != nil {
		return nil, err
	}
	a.table, a.tried, a.lastCheck = table, stamp, a.o.now()
	return a, nil
}

// Authenticate implements Authenticator.
func (a *StaticTokenFile) Authenticate(_ context.Context, token string) (*Identity, error) {
	return a.current().authenticate(token)
}

func (a *StaticTokenFile) current() tokenTable {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.o.now()
	if now.Sub(a.lastCheck) < reloadCheckInterval {
		return a.table
	}
	a.lastCheck = now
	stamp, err := statFile(a.path)
	if err != nil {
		if a.tried.info != nil {
			a.o.logger.Error("static token file unreadable; keeping the tokens read before", "path", a.path, "error", err)
		}
		a.tried = fileStamp{}
		return a.table
	}
	if stamp.same(a.tried) {
		return a.table
	}
	a.tried = stamp
	table, err := readTokenFile(a.path)
	if err != nil {
		a.o.logger.Error("static token file changed but cannot be used; keeping the tokens read before", "path", a.path, "error", err)
		return a.table
	}
	a.table = table
	a.o.logger.Info("static token file reloaded", "path", a.path, "tokens", len(table))
	return a.table
}

// readTokenFile parses a static token file. Errors name lines, never tokens.
func readTokenFile(path string) (tokenTable, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read static token file: %w", err)
	}
	table := tokenTable{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("static token file %s: line %d: want \"TOKEN AGENT-ID\", got %d fields", path, n, len(fields))
		}
		key := sha256.Sum256([]byte(fields[0]))
		if _, dup := table[key]; dup {
			return nil, fmt.Errorf("static token file %s: line %d: token already used on an earlier line", path, n)
		}
		table[key] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("static token file %s: %w", path, err)
	}
	if len(table) == 0 {
		return nil, fmt.Errorf("static token file %s: no tokens", path)
	}
	return table, nil
}
