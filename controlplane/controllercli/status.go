package controllercli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
)

// statusOptions are `gatehouse status`'s flags.
type statusOptions struct {
	url        string
	kubeconfig string
	namespace  string
	selector   string
	debugPort  int
	timeout    time.Duration
}

// defaultControllerSelector selects the controller's Pods, as
// manifests/base/deployment.yaml labels them.
const defaultControllerSelector = "app.kubernetes.io/name=gatehouse,app.kubernetes.io/component=controller"

// NewStatusCommand is `gatehouse status`: the agent registry of every
// controller replica (--debug-bind-address) as one table.
func NewStatusCommand() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the agents connected to every controller replica and what they serve",
		Long: `Print the agent registry of every controller replica (GET /debug/agents on
its --debug-bind-address, 127.0.0.1:8090 inside its Pod) as one table: one row
per agent, with the replica it is connected to, the snapshot version it
serves, how long it has been behind the current one (STALE past
--agent-stale-after), and the last status it reported.

The replicas are the Pods --selector names in --namespace, reached through
the API server as kubectl port-forward reaches them (it needs get and list
on pods and create on pods/portforward there). A replica that cannot be
reached is named on stderr and the command exits 1 after printing the
others; 2 when none could be asked.

--url asks one controller at that address instead, such as one reached with
kubectl -n gatehouse-system port-forward pod/<name> 8090.`,
		Example: `  gatehouse status
  gatehouse status --namespace gatehouse-system --kubeconfig ~/.kube/prod
  gatehouse status --url http://127.0.0.1:8090/debug/agents`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			if cmd.Flags().Changed("url") {
				rep, err := FetchReport(ctx, o.url)
				if err != nil {
					return err
				}
				printReplicas(cmd.OutOrStdout(), []replicaReport{{name: urlHost(o.url), rep: rep}}, time.Now())
				return nil
			}
			return o.runOnCluster(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.url, "url", "http://"+defaultDebugAddress+server.DebugAgentsPath, "ask one controller's agent registry at this endpoint instead of every replica's")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVarP(&o.namespace, "namespace", "n", "gatehouse-system", "the controller's namespace")
	fs.StringVarP(&o.selector, "selector", "l", defaultControllerSelector, "label selector of the controller's Pods")
	fs.IntVar(&o.debugPort, "debug-port", 8090, "the port of the controllers' --debug-bind-address inside their Pods")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long to wait for the controllers")
	cliargs.None(cmd, "ask every replica, or name one controller with --url", "")
	return cmd
}

// runOnCluster asks every controller replica and prints what they say.
func (o *statusOptions) runOnCluster(ctx context.Context, stdout, stderr io.Writer) error {
	// client-go's port-forward would write klog lines of its own; every
	// failure comes back as an error and is reported below.
	klog.SetSlogLogger(slog.New(slog.DiscardHandler))
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	reps, err := o.askReplicas(ctx, cs, portForwarder(cfg, cs))
	if err != nil {
		return err
	}
	printReplicas(stdout, reps, time.Now())
	return unreached(stderr, reps)
}

// replicaReport is one controller replica's registry, or why it is not
// known.
type replicaReport struct {
	name string
	rep  *server.Report
	err  error  // not reached
	note string // not asked: not running
}

// reachFunc opens a way to pod's port: the base URL to send requests to,
// and a function that closes it.
type reachFunc func(ctx context.Context, pod *corev1.Pod, port int) (base string, stop func(), err error)

// askReplicas lists the controller's Pods and asks each running one for
// its registry, at the same time.
func (o *statusOptions) askReplicas(ctx context.Context, cs kubernetes.Interface, reach reachFunc) ([]replicaReport, error) {
	pods, err := cs.CoreV1().Pods(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: o.selector})
	if err != nil {
		return nil, fmt.Errorf("list the controller's Pods (%s) in namespace %s: %w", o.selector, o.namespace, err)
	}
	if len(pods.Items) == 0 {
		return nil, fmt.Errorf("no Pod in namespace %s matches %s: is Gatehouse installed there? (--namespace, --selector)", o.namespace, o.selector)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	reps := make([]replicaReport, len(pods.Items))
	var wg sync.WaitGroup
	for i := range pods.Items {
		pod := &pods.Items[i]
		reps[i].name = pod.Name
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			reps[i].note = "not running (" + podState(pod) + "): no agents"
			continue
		}
		wg.Go(func() { reps[i].rep, reps[i].err = askReplica(ctx, pod, o.debugPort, reach) })
	}
	wg.Wait()
	return reps, nil
}

func podState(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "terminating"
	}
	return strings.ToLower(string(pod.Status.Phase))
}

func askReplica(ctx context.Context, pod *corev1.Pod, port int, reach reachFunc) (*server.Report, error) {
	base, stop, err := reach(ctx, pod, port)
	if err != nil {
		return nil, err
	}
	defer stop()
	return FetchReport(ctx, base+server.DebugAgentsPath)
}

// unreached names on stderr every replica that could not be asked: exit
// status 1 when others answered, an error (2) when none did.
func unreached(stderr io.Writer, reps []replicaReport) error {
	var failed []string
	answered := 0
	for _, r := range reps {
		switch {
		case r.err != nil:
			failed = append(failed, fmt.Sprintf("controller replica %s not reached: %v", r.name, r.err))
		case r.rep != nil:
			answered++
		}
	}
	switch {
	case len(failed) == 0:
		return nil
	case answered == 0:
		return errors.New(strings.Join(failed, "; "))
	}
	for _, f := range failed {
		fmt.Fprintf(stderr, "warning: %s; its agents are not shown\n", f)
	}
	return cliexit.Error{Code: 1}
}

// FetchReport reads the controller's agent registry at url.
func FetchReport(ctx context.Context, url string) (*server.Report, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("--url %q: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask controller at %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("controller at %s answered HTTP %d", url, resp.StatusCode)
	}
	var rep server.Report
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&rep); err != nil {
		return nil, fmt.Errorf("read agent registry from %s: %w", url, err)
	}
	return &rep, nil
}

func urlHost(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}

// printReplicas prints a line per replica (its snapshot version and how
// many agents it holds), then every agent in one table.
func printReplicas(w io.Writer, reps []replicaReport, now time.Time) {
	agents := 0
	for _, r := range reps {
		switch {
		case r.rep != nil:
			fmt.Fprintf(w, "controller %s: snapshot version %s, %d agent(s)\n", r.name, short(r.rep.Version), len(r.rep.Agents))
			agents += len(r.rep.Agents)
		case r.err != nil:
			fmt.Fprintf(w, "controller %s: not reached\n", r.name)
		default:
			fmt.Fprintf(w, "controller %s: %s\n", r.name, r.note)
		}
	}
	fmt.Fprintln(w)
	if agents == 0 {
		fmt.Fprintln(w, "no agents connected")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tAGENT\tPOD\tCONNECTED\tSINCE\tSERVING\tIN SYNC\tBEHIND\tLAST STATUS\tERROR")
	stale := 0
	for _, r := range reps {
		if r.rep == nil {
			continue
		}
		for _, a := range r.rep.Agents {
			fmt.Fprintf(tw, "%s\t%s\n", r.name, agentRow(a, now))
			if a.Stale {
				stale++
			}
		}
	}
	_ = tw.Flush()
	if stale > 0 {
		fmt.Fprintf(w, "\n%d agent(s) stale: behind the current version for longer than %s; their proxies serve older policy and revocations.\n", stale, staleAfter(reps))
	}
}

// agentRow is one agent's cells, tab-separated.
func agentRow(a server.AgentStatus, now time.Time) string {
	pod := strings.Trim(a.Pod.Namespace+"/"+a.Pod.Name, "/")
	last := a.LastStatus
	if last == server.StatusRejected && a.RejectionClass != "" {
		last += " (" + a.RejectionClass + ")"
	}
	if last != "" && a.LastVersion != "" {
		last += " " + short(a.LastVersion)
	}
	behind := "-"
	if a.BehindSince != nil {
		behind = now.Sub(*a.BehindSince).Round(time.Second).String()
	}
	if a.Stale {
		behind += " STALE"
	}
	return fmt.Sprintf("%s\t%s\t%v\t%s\t%s\t%v\t%s\t%s\t%s", a.ID, pod, a.Connected,
		now.Sub(a.ConnectedSince).Round(time.Second), short(a.VersionServed), a.InSync, behind, last, oneLine(a.LastError))
}

func staleAfter(reps []replicaReport) string {
	for _, r := range reps {
		if r.rep != nil && r.rep.StaleAfter != "" {
			return r.rep.StaleAfter
		}
	}
	return "--agent-stale-after"
}

func short(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
