package casbindiff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The messages of test/argocdref (its Case, Request, Answer and Decision).
type argoCase struct {
	Builtin      bool              `json:"builtin,omitempty"`
	Patterns     []string          `json:"patterns,omitempty"`
	Names        []string          `json:"names,omitempty"`
	Destinations []argoTarget      `json:"destinations,omitempty"`
	Targets      []argoTarget      `json:"targets,omitempty"`
	ExtConfigs   []argoExtConfig   `json:"extConfigs,omitempty"`
	Calls        []argoCall        `json:"calls,omitempty"`
	Policy       string            `json:"policy"`
	DefaultRole  string            `json:"defaultRole,omitempty"`
	MatchMode    string            `json:"matchMode,omitempty"`
	Extra        map[string]string `json:"extra,omitempty"`
	Namespace    string            `json:"namespace"`
	Projects     []argoProject     `json:"projects"`
	Requests     []argoRequest     `json:"requests"`
}

type argoProject struct {
	Name  string     `json:"name"`
	Roles []argoRole `json:"roles,omitempty"`
}

type argoRole struct {
	Name     string   `json:"name"`
	Policies []string `json:"policies,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

type argoRequest struct {
	Subject      string   `json:"subject"`
	Groups       []string `json:"groups,omitempty"`
	Project      string   `json:"project"`
	AppNamespace string   `json:"appNamespace"`
	App          string   `json:"app"`
	Extension    string   `json:"extension"`
}

type argoAnswer struct {
	Refused   string `json:"refused,omitempty"`
	Builtin   string `json:"builtin,omitempty"`
	Decisions []struct {
		ApplicationGet  bool `json:"applicationGet"`
		ExtensionInvoke bool `json:"extensionInvoke"`
	} `json:"decisions,omitempty"`
	InList      []bool           `json:"inList,omitempty"`
	Panics      []bool           `json:"panics,omitempty"`
	Permitted   []bool           `json:"permitted,omitempty"`
	ExtAnswers  []argoExtAnswer  `json:"extAnswers,omitempty"`
	CallAnswers []argoCallAnswer `json:"callAnswers,omitempty"`
}

// The extension call messages (argocdref's ExtensionCall, App and
// CallAnswer).
type argoCall struct {
	Namespace    string            `json:"namespace"`
	Application  argoApp           `json:"application"`
	Clusters     []argoTarget      `json:"clusters,omitempty"`
	UserID       string            `json:"userID,omitempty"`
	Username     string            `json:"username,omitempty"`
	Groups       []string          `json:"groups,omitempty"`
	Path         string            `json:"path"`
	Header       map[string]string `json:"header"`
	Authenticate bool              `json:"authenticate,omitempty"`
	Deny         bool              `json:"deny,omitempty"`
	Services     []argoTarget      `json:"services,omitempty"`
}

type argoApp struct {
	Namespace   string     `json:"namespace"`
	Name        string     `json:"name"`
	Project     string     `json:"project"`
	Destination argoTarget `json:"destination"`
}

type argoCallAnswer struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Path   string            `json:"path,omitempty"`
}

// The extension config messages (argocdref's ExtConfig, Secret, ExtAnswer,
// Entry and Proxy).
type argoExtConfig struct {
	ArgoCDCM map[string]string `json:"argocdCM"`
	Secrets  []argoSecret      `json:"secrets"`
}

type argoSecret struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Data   map[string]string `json:"data"`
}

type argoExtAnswer struct {
	Error      string                 `json:"error,omitempty"`
	Ambiguous  bool                   `json:"ambiguous,omitempty"`
	Extensions map[string][]argoProxy `json:"extensions,omitempty"`
	Entries    []argoEntry            `json:"entries,omitempty"`
}

type argoEntry struct {
	Key        string      `json:"key"`
	Index      int         `json:"index"`
	Name       string      `json:"name,omitempty"`
	Error      string      `json:"error,omitempty"`
	Proxies    []argoProxy `json:"proxies,omitempty"`
	Registered bool        `json:"registered,omitempty"`
}

type argoProxy struct {
	ClusterName   string `json:"clusterName,omitempty"`
	ClusterServer string `json:"clusterServer,omitempty"`
	Scheme        string `json:"scheme"`
	Host          string `json:"host"`
	// Path is Gatehouse's only: Argo CD's proxy drops the URL's path.
	Path                  string              `json:"-"`
	Headers               map[string][]string `json:"headers,omitempty"`
	ConnectionTimeout     time.Duration       `json:"connectionTimeout"`
	KeepAlive             time.Duration       `json:"keepAlive"`
	IdleConnectionTimeout time.Duration       `json:"idleConnectionTimeout"`
	MaxIdleConnections    int                 `json:"maxIdleConnections"`
}

type argoTarget struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// oracle is a running test/argocdref process.
type oracle struct {
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Scanner
	cmd *exec.Cmd
}

var (
	oracleOnce sync.Once
	theOracle  *oracle
	oracleErr  error
)

// argoCD returns the shared Argo CD process: $GATEHOUSE_ARGOCDREF (a built
// test/argocdref), or `go run` of test/argocdref, which builds it the first
// time and then starts the cached executable.
func argoCD(t *testing.T) *oracle {
	t.Helper()
	oracleOnce.Do(func() { theOracle, oracleErr = startOracle() })
	if oracleErr != nil {
		t.Fatal(oracleErr)
	}
	return theOracle
}

func startOracle() (*oracle, error) {
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = filepath.Join("..", "argocdref")
	if bin := os.Getenv("GATEHOUSE_ARGOCDREF"); bin != "" {
		cmd = exec.Command(bin)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start test/argocdref (Argo CD's enforcer): %w", err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return &oracle{in: in, out: sc, cmd: cmd}, nil
}

func (o *oracle) ask(t *testing.T, c argoCase) argoAnswer {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("send to argocdref: %v", err)
	}
	if !o.out.Scan() {
		t.Fatalf("argocdref stopped (its build or run failed: see above): %v", o.out.Err())
	}
	var a argoAnswer
	dec := json.NewDecoder(bytes.NewReader(o.out.Bytes()))
	dec.DisallowUnknownFields() // the answer's types are argocdref's: see its serve
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("argocdref answer: %v", err)
	}
	return a
}
