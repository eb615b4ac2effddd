package app

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

// NewKubeconfigCmd returns `flotilla kubeconfig`.
func NewKubeconfigCmd(streams Streams) *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "kubeconfig [gateway|host|member-N|all]",
		Short: "Print the path of a kubeconfig of the local environment",
		Long: `Print the path of an admin kubeconfig of the local environment.

With no argument (or "gateway"): the federation's one endpoint, flotilla
gateway: host kinds (templates, policies, MemberClusters) and the members'
pods, events, nodes, EndpointSlices and ReplicaSets, with logs, exec and
port-forward. "host" is the raw host apiserver (operators; no member
kinds), "member-N" one member's apiserver, and "all" a kubeconfig holding
every cluster, one context per cluster name.`,
		Example: `  kubectl --kubeconfig "$(flotilla kubeconfig)" get pods -A -o wide
  kubectl --kubeconfig "$(flotilla kubeconfig host)" get namespaces
  kubectl --kubeconfig "$(flotilla kubeconfig all)" --context member-2 get nodes`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "gateway"
			if len(args) == 1 {
				name = args[0]
			}
			st, err := localenv.LoadState(stateDir)
			if err != nil {
				return err
			}
			switch name {
			case "all":
				fmt.Fprintln(streams.Out, filepath.Join(st.Dir, "kubeconfig"))
				return nil
			case "gateway":
				gw := localenv.GatewayAdminKubeconfig(st.Dir)
				if !fileExists(gw) {
					return fmt.Errorf("the environment in %s has no gateway (started before flotilla gateway existed, or without the flotilla binary): run flotilla down and flotilla up", st.Dir)
				}
				fmt.Fprintln(streams.Out, gw)
				return nil
			}
			c, ok := st.Cluster(name)
			if !ok {
				return fmt.Errorf("no cluster %q in the environment in %s (clusters: %s)", name, st.Dir, strings.Join(st.ClusterNames(), ", "))
			}
			fmt.Fprintln(streams.Out, c.Kubeconfig)
			return nil
		},
	}
	addStateDirFlag(cmd.Flags(), &stateDir)
	return cmd
}
