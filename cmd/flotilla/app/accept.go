package app

import (
	"fmt"

	"github.com/spf13/cobra"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/join"
)

// NewAcceptCmd returns `flotilla accept`.
func NewAcceptCmd(streams Streams) *cobra.Command {
	var host hostFlags
	var revoke bool
	cmd := &cobra.Command{
		Use:   "accept NAME",
		Short: "Accept a pull member cluster, so that its agent gets its certificate",
		Long: `Accept pull member NAME: set spec.accepted on its MemberCluster.

A pull member's agent asks the hub for a client certificate with the
bootstrap credential from ` + "`flotilla join --mode pull`" + `. Until a hub admin
accepts the member the request waits (the MemberCluster's Accepted
condition names it and who sent it), the member is not Ready and gets no
workloads. Once accepted, the controller-manager signs the request
(signer ` + v1alpha1.SignerAgent + `, subject ` + v1alpha1.AgentUserPrefix + `NAME) and renews it
before it expires.

Only users allowed to update memberclusters/accept (hub admins) may do
this: the host's admission policy refuses anyone else.

--revoke sets spec.accepted to false: the member stops being Ready, its
workloads move away at once (no grace period or failover brake, as for a
drain) and its agent's certificate is not renewed. To cut the agent off at once, unjoin the
member: that removes its access on the hub.

To refuse a request instead, deny it:
  kubectl certificate deny CSR_NAME`,
		Example: `  kubectl get membercluster edge-9 -o jsonpath='{.status.conditions[?(@.type=="Accepted")].message}'
  flotilla accept edge-9
  flotilla accept edge-9 --revoke`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := host.config()
			if err != nil {
				return err
			}
			if err := join.Accept(cmd.Context(), cfg, args[0], !revoke); err != nil {
				return err
			}
			if revoke {
				fmt.Fprintf(streams.Out, "MemberCluster %s is no longer accepted: its agent's certificate will not be renewed\n", args[0])
				return nil
			}
			fmt.Fprintf(streams.Out, "MemberCluster %s accepted: its agent's certificate requests are signed\n", args[0])
			return nil
		},
	}
	host.add(cmd.Flags())
	cmd.Flags().BoolVar(&revoke, "revoke", false, "withdraw the acceptance instead")
	return cmd
}
