package app

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

// NewStatusCmd returns `flotilla status`.
func NewStatusCmd(streams Streams) *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List the local environment's components with ports, pids and health",
		Long: `List every component of the local environment with its pid, ports and health
(its health endpoint is probed). Exits non-zero when a component is down or
unhealthy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, rows, err := localenv.Status(cmd.Context(), stateDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "Environment in %s, started %s: host + %d %s member(s)\n\n",
				st.Dir, st.StartedAt.Local().Format("2006-01-02 15:04:05"), st.Members, st.MemberMode)
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CLUSTER\tCOMPONENT\tPID\tPORTS\tHEALTH\tLOG")
			bad := 0
			for _, r := range rows {
				health := "healthy"
				if r.Health != nil {
					bad++
					health = "unhealthy: " + truncate(r.Health.Error(), 60)
					if !r.Running {
						health = "stopped"
					}
				}
				ports := make([]string, 0, len(r.Component.Ports))
				for _, p := range r.Component.Ports {
					ports = append(ports, strconv.Itoa(p))
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.Cluster, r.Component.Name, r.Component.PID, strings.Join(ports, ","), health, r.Component.Log)
			}
			if err := tw.Flush(); err != nil {
				return fmt.Errorf("write the status table: %w", err)
			}
			switch {
			case len(rows) == 0:
				// A state without processes: an `up` that failed before
				// starting any.
				return fmt.Errorf("the environment in %s has no processes: run `flotilla down --state-dir %s` and `flotilla up` again", st.Dir, st.Dir)
			case bad > 0:
				return fmt.Errorf("%d of %d components are not healthy", bad, len(rows))
			}
			return nil
		},
	}
	addStateDirFlag(cmd.Flags(), &stateDir)
	return cmd
}

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
