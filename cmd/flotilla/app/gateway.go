package app

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/flotilla-io/flotilla/internal/gateway"
)

// GatewayOptions are the inputs of `flotilla gateway`.
type GatewayOptions struct {
	// Gateway configures the server.
	Gateway *gateway.Options
	// Verbosity is the log verbosity (--v).
	Verbosity int
}

// NewGatewayCmd returns `flotilla gateway`.
func NewGatewayCmd(_ Streams) *cobra.Command {
	o := &GatewayOptions{Gateway: gateway.NewOptions()}
	cmd := &cobra.Command{
		Use:   "gateway --host-kubeconfig FILE --client-ca-file FILE",
		Short: "Serve the federation's one Kubernetes endpoint (in progress: host kinds pass through)",
		Long: `Serve a Kubernetes-compatible HTTPS endpoint in front of the host
apiserver, for kubectl, client-go, Helm and any other Kubernetes client.

Users are authenticated as the host authenticates them: client
certificates signed by --client-ca-file, bearer tokens checked with a
TokenReview to the host. Every request is authorized by the host (a
SubjectAccessReview) and recorded in the audit log (--audit-log-path,
--audit-policy-file). Requests for host kinds (templates, policies,
MemberClusters, CRDs, discovery, OpenAPI) are forwarded to the host as the
user (impersonation), so the host's RBAC, admission and errors apply
unchanged; kubectl --as works when the user may impersonate.

--host-kubeconfig is the gateway's own identity on the host: it needs
impersonate on users, groups, uids, userextras and serviceaccounts, and
create on tokenreviews and subjectaccessreviews (config/rbac/gateway.yaml);
nothing else. Without --tls-cert-file the gateway makes a self-signed
certificate in --cert-dir.

/healthz and /livez say whether the gateway runs, /readyz also whether the
host answers; /metrics needs authorization. Member-only kinds (pods,
events, nodes) and routed pod operations are not served yet
(docs/design/gateway.md).`,
		Example: `  flotilla gateway --host-kubeconfig gateway.kubeconfig --client-ca-file host-client-ca.crt \
    --tls-cert-file gateway.crt --tls-private-key-file gateway.key --secure-port 8443 \
    --audit-log-path /var/log/flotilla/audit.log --audit-policy-file audit-policy.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Gateway.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	fs := cmd.Flags()
	o.Gateway.AddFlags(fs)
	fs.IntVarP(&o.Verbosity, "v", "v", 0, "log verbosity")
	return cmd
}

// Run serves until the command's context ends.
func (o *GatewayOptions) Run(cmd *cobra.Command) error {
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(o.Verbosity)))
	klog.SetLogger(logger)
	s, err := gateway.New(o.Gateway)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	return s.Run(klog.NewContext(cmd.Context(), logger))
}
