package controllercli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"

	"github.com/gatehouse-dev/gatehouse/agent/server"
)

// NewStatusCommand is `gatehouse status`: the controller's agent registry
// (--debug-bind-address) as a table.
func NewStatusCommand() *cobra.Command {
	var url string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the agents connected to a controller and what they serve",
		Long: `Print the controller's agent registry (GET /debug/agents on its
--debug-bind-address, 127.0.0.1:8090 inside its Pod) as a table: one row per
agent, with the snapshot version it serves, how long it has been behind the
current one (STALE past --agent-stale-after), and the last status it
reported. Reach the controller with kubectl port-forward:

  kubectl -n gatehouse-system port-forward deploy/gatehouse-controller 8090
  gatehouse status`,
		Example: `  gatehouse status
  gatehouse status --url http://127.0.0.1:8090/debug/agents`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			rep, err := FetchReport(ctx, url)
			if err != nil {
				return err
			}
			printReport(cmd.OutOrStdout(), rep, time.Now())
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://"+defaultDebugAddress+server.DebugAgentsPath, "the controller's agent registry endpoint")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for the controller")
	cliargs.None(cmd, "name the controller with --url", "")
	return cmd
}

// FetchReport reads the controller's agent registry at url.
func FetchReport(ctx context.Context, url string) (*server.Report, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("--url %q: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask controller at %s (is a port-forward running?): %w", url, err)
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

func printReport(w io.Writer, rep *server.Report, now time.Time) {
	fmt.Fprintf(w, "snapshot version: %s\n\n", short(rep.Version))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tPOD\tCONNECTED\tSINCE\tSERVING\tIN SYNC\tBEHIND\tLAST STATUS\tERROR")
	stale := 0
	for _, a := range rep.Agents {
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
			stale++
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%v\t%s\t%s\t%s\n", a.ID, pod, a.Connected,
			now.Sub(a.ConnectedSince).Round(time.Second), short(a.VersionServed), a.InSync, behind, last, oneLine(a.LastError))
	}
	_ = tw.Flush()
	if stale > 0 {
		fmt.Fprintf(w, "\n%d agent(s) stale: behind the current version for longer than %s; their proxies serve older policy and revocations.\n", stale, rep.StaleAfter)
	}
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
