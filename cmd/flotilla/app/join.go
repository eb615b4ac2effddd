package app

import (
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla-io/flotilla/internal/join"
)

// JoinOptions are the inputs of `flotilla join`.
type JoinOptions struct {
	join.Options
	host             hostFlags
	memberKubeconfig string
	memberContext    string
	wait             time.Duration
	streams          Streams
	// mode is --mode: push (default) or pull.
	mode string
	// agentKubeconfig and tokenDuration: where a pull join writes the
	// agent's hub kubeconfig, and how long its token lasts.
	agentKubeconfig string
	tokenDuration   time.Duration
	// bootstrapKubeconfig and bootstrapDuration: where a pull join writes
	// the agent's bootstrap kubeconfig, and how long its token lasts;
	// accept accepts the member at once.
	bootstrapKubeconfig string
	bootstrapDuration   time.Duration
	accept              bool
	// restrictKinds is --restrict-kinds, parsed into RestrictKinds.
	restrictKinds []string
}

// NewJoinCmd returns `flotilla join`.
func NewJoinCmd(streams Streams) *cobra.Command {
	o := &JoinOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "join NAME (--kubeconfig FILE | --mode pull)",
		Short: "Join a member cluster to the Flotilla control plane",
		Long: `Join a Kubernetes cluster to the control plane as MemberCluster NAME.

In the member, join creates namespace flotilla-system (or uses the one that
is there), annotates it with the control plane's id and NAME (the claim, so
that no other control plane or MemberCluster can take the member; the
controller-manager enforces it too) and creates ServiceAccount
flotilla-controller, ClusterRole and ClusterRoleBinding flotilla:controller,
and asks for a token of the ServiceAccount (TokenRequest) that expires after
--token-duration (default 168h); the controller-manager renews it at 80% of
its lifetime, in place. In the host it stores the token and the
member's CA in Secret flotilla-system/NAME, bound to the MemberCluster (owner
reference and label flotilla.io/member-cluster=NAME), and creates
MemberCluster NAME. Joining again with the same name refreshes the
credentials. A member joined to another control plane, or to this one under
another name, is refused. A plain http --api-endpoint is refused by the
controller-manager unless it runs with --allow-insecure-members.

By default the ClusterRole grants every verb on every resource, so that
any kind can be propagated without setup. --restrict-kinds makes it grant
writes (get, list, watch, create, update, patch, delete) only on the listed
resources, plus reading nodes and pods (capacity), namespaces (creating the
ones copies need, claiming flotilla-system), health and discovery URLs, and
asking for its own token. The MemberCluster then marks every other served
kind readOnly and shows condition KindsRestricted; objects of those kinds
are not placed in the member (the scheduler says why) rather than retried.
Join again with other --restrict-kinds, or without it, to change the grant.

--kubeconfig must grant cluster-admin in the member; the host kubeconfig
must allow creating MemberClusters and Secrets.

With --mode pull nothing is done in the member and the host holds no
credential for it: join creates MemberCluster NAME with syncMode Pull and,
owned by it, the hub namespace flotilla-cluster-NAME, the ServiceAccounts
"bootstrap" and "agent" there, and the agent's narrow rights (the
ClusterRole flotilla-agent bound in that namespace only, get/status patch
on this one MemberCluster, and asking for its own certificate) for the
user flotilla:agent:NAME and the ServiceAccount "agent". With
--bootstrap-kubeconfig it writes a kubeconfig whose token (of
"bootstrap", expiring after --bootstrap-token-duration) can do nothing
but ask for the agent's certificate. Run
` + "`flotilla agent --cluster NAME --bootstrap-kubeconfig FILE`" + ` in the member: the
MemberCluster shows the request (condition Accepted, reason
PendingAcceptance), and once a hub admin runs ` + "`flotilla accept NAME`" + ` (or
join ran with --accept) the controller-manager signs it and the agent
switches to its own certificate, renewed before it expires.
--agent-kubeconfig instead writes a token of "agent" with the agent's
full access (expiring after --token-duration, not renewed) and accepts the
member at once: the admin vouches for whoever holds the file. The host
kubeconfig must be an admin's (it grants RBAC).`,
		Example: `  flotilla join prod-east-1 --kubeconfig ~/.kube/prod-east-1 --labels topology.kubernetes.io/region=us-east
  flotilla join edge-7 --kubeconfig all.kubeconfig --context edge-7 --host-kubeconfig host.kubeconfig --wait 2m
  flotilla join tenant-3 --kubeconfig t3.kubeconfig --restrict-kinds deployments.apps,services,configmaps
  flotilla join edge-9 --mode pull --bootstrap-kubeconfig edge-9-bootstrap.kubeconfig
  flotilla accept edge-9   # after checking the request the MemberCluster shows
  flotilla join edge-10 --mode pull --agent-kubeconfig edge-10-hub.kubeconfig --token-duration 24h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.memberKubeconfig, "kubeconfig", "", "kubeconfig with cluster-admin in the member (required)")
	fs.StringVar(&o.memberContext, "context", "", "context in the member kubeconfig")
	o.host.add(fs)
	fs.StringVar(&o.APIEndpoint, "api-endpoint", "", "member apiserver URL as the control plane reaches it (default: the server in --kubeconfig)")
	fs.StringToStringVar(&o.Labels, "labels", nil, "labels for the MemberCluster, such as region and zone (k=v,...)")
	fs.StringVar(&o.CredentialsNamespace, "credentials-namespace", "flotilla-system", "host namespace of the credentials Secret")
	fs.DurationVar(&o.Timeout, "timeout", time.Minute, "how long to wait for an earlier unjoin's namespace flotilla-system in the member to finish terminating")
	fs.DurationVar(&o.wait, "wait", 0, "wait up to this long for the MemberCluster to become Ready (0: do not wait)")
	fs.StringVar(&o.mode, "mode", "push", "push: the control plane reaches the member with a credential join creates there; pull: an agent in the member connects out (nothing is done in the member)")
	fs.StringVar(&o.agentKubeconfig, "agent-kubeconfig", "", "with --mode pull: write a kubeconfig for the agent (a token of its ServiceAccount) to this file")
	fs.DurationVar(&o.tokenDuration, "token-duration", 0, "push: how long the control plane's token for the member is valid (0: 168h; the controller-manager renews it at 80% of its lifetime); pull with --agent-kubeconfig: how long the agent's token is valid (0: 24h; not renewed). At least 10m")
	fs.StringVar(&o.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "with --mode pull: write a bootstrap kubeconfig for the agent (a token that can only ask for the agent's certificate) to this file")
	fs.DurationVar(&o.bootstrapDuration, "bootstrap-token-duration", 7*24*time.Hour, "with --bootstrap-kubeconfig: how long the bootstrap token is valid (the agent needs it again only if its certificate expires, or if the hub refuses to renew a certificate that may be an earlier member's of the name)")
	fs.StringSliceVar(&o.restrictKinds, "restrict-kinds", nil, "push: let the control plane write only these resources in the member (resource[.group], comma-separated, e.g. deployments.apps,configmaps); default: every resource")
	fs.BoolVar(&o.accept, "accept", false, "with --mode pull: accept the member now (as `flotilla accept NAME`), so its agent's first certificate request is signed without waiting for an admin")
	return cmd
}

// Validate refuses bad input before anything is changed.
func (o *JoinOptions) Validate() error {
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return fmt.Errorf("invalid member name %q: %s", o.Name, errs[0])
	}
	switch o.mode {
	case "push":
		if o.memberKubeconfig == "" {
			return fmt.Errorf("--kubeconfig is required: a kubeconfig with cluster-admin in the member (or --mode pull)")
		}
		if o.agentKubeconfig != "" || o.bootstrapKubeconfig != "" || o.accept {
			return fmt.Errorf("--agent-kubeconfig, --bootstrap-kubeconfig and --accept need --mode pull")
		}
		if o.tokenDuration == 0 {
			o.tokenDuration = join.DefaultTokenDuration
		}
		kinds, err := join.ParseKinds(o.restrictKinds)
		if err != nil {
			return fmt.Errorf("--restrict-kinds: %w", err)
		}
		if len(o.restrictKinds) > 0 && len(kinds) == 0 {
			return fmt.Errorf("--restrict-kinds names no resource: list the resources the control plane may write, or leave the flag out for every resource")
		}
		o.RestrictKinds = kinds
		if o.tokenDuration < 10*time.Minute {
			return fmt.Errorf("--token-duration must be at least 10m, got %s", o.tokenDuration)
		}
	case "pull":
		if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 || len(o.Name) > 46 {
			return fmt.Errorf("invalid pull member name %q: a DNS label of at most 46 characters (it names the hub namespace flotilla-cluster-%s)", o.Name, o.Name)
		}
		if o.memberKubeconfig != "" || o.APIEndpoint != "" || len(o.restrictKinds) > 0 {
			return fmt.Errorf("--kubeconfig, --api-endpoint and --restrict-kinds are for push members: a pull member's agent connects out with its own credentials")
		}
		if o.tokenDuration == 0 {
			o.tokenDuration = 24 * time.Hour
		}
		if o.agentKubeconfig != "" && o.tokenDuration < 10*time.Minute {
			return fmt.Errorf("--token-duration must be at least 10m, got %s", o.tokenDuration)
		}
		if o.bootstrapKubeconfig != "" && o.bootstrapDuration < 10*time.Minute {
			return fmt.Errorf("--bootstrap-token-duration must be at least 10m, got %s", o.bootstrapDuration)
		}
		if o.agentKubeconfig != "" && o.agentKubeconfig == o.bootstrapKubeconfig {
			return fmt.Errorf("--agent-kubeconfig and --bootstrap-kubeconfig must name different files")
		}
	default:
		return fmt.Errorf("--mode must be push or pull, got %q", o.mode)
	}
	// The name is also a label value on the credentials Secret.
	if errs := validation.IsValidLabelValue(o.Name); len(errs) > 0 {
		return fmt.Errorf("invalid member name %q: %s", o.Name, errs[0])
	}
	if o.APIEndpoint != "" {
		if u, err := url.Parse(o.APIEndpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("--api-endpoint %q must be an absolute http(s) URL such as https://10.0.0.1:6443", o.APIEndpoint)
		}
	}
	for k, v := range o.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("invalid label key %q: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("invalid value for label %s: %s", k, errs[0])
		}
	}
	return nil
}

// Run joins the member.
func (o *JoinOptions) Run(cmd *cobra.Command) error {
	if o.mode == "pull" {
		return o.runPull(cmd)
	}
	member, err := loadConfig(o.memberKubeconfig, o.memberContext)
	if err != nil {
		return fmt.Errorf("member kubeconfig: %w", err)
	}
	host, err := o.host.config()
	if err != nil {
		return err
	}
	o.Host, o.Member, o.Out = host, member, o.streams.Out
	o.TokenDuration = o.tokenDuration
	if err := join.Join(cmd.Context(), o.Options); err != nil {
		return fmt.Errorf("join %s: %w", o.Name, err)
	}
	if o.wait > 0 {
		fmt.Fprintf(o.streams.Out, "Waiting up to %s for %s to become Ready\n", o.wait, o.Name)
		if err := join.WaitReady(cmd.Context(), host, o.Name, o.wait); err != nil {
			return err
		}
		fmt.Fprintf(o.streams.Out, "%s is Ready\n", o.Name)
	}
	return nil
}

// runPull registers a pull member and, if asked, writes its agent's
// kubeconfig.
func (o *JoinOptions) runPull(cmd *cobra.Command) error {
	host, err := o.host.config()
	if err != nil {
		return err
	}
	po := join.PullOptions{Name: o.Name, Host: host, Labels: o.Labels, Accept: o.accept, Out: o.streams.Out}
	if o.agentKubeconfig != "" {
		po.TokenDuration = o.tokenDuration
	}
	if o.bootstrapKubeconfig != "" {
		po.BootstrapDuration = o.bootstrapDuration
	}
	creds, err := join.JoinPull(cmd.Context(), po)
	if err != nil {
		return fmt.Errorf("join %s: %w", o.Name, err)
	}
	if creds.Bootstrap != nil {
		if err := writePrivate(o.bootstrapKubeconfig, creds.Bootstrap); err != nil {
			return fmt.Errorf("write the agent's bootstrap kubeconfig: %w", err)
		}
		fmt.Fprintf(o.streams.Out, "Wrote %s (its token expires in %s); in the member run:\n  flotilla agent --cluster %s --bootstrap-kubeconfig %s --cert-dir DIR\n",
			o.bootstrapKubeconfig, o.bootstrapDuration, o.Name, o.bootstrapKubeconfig)
		if !o.accept {
			fmt.Fprintf(o.streams.Out, "then check the request in `kubectl get membercluster %s -o yaml` (condition Accepted) and accept it: flotilla accept %s\n", o.Name, o.Name)
		}
	}
	if creds.Agent != nil {
		if err := writePrivate(o.agentKubeconfig, creds.Agent); err != nil {
			return fmt.Errorf("write the agent's kubeconfig: %w", err)
		}
		fmt.Fprintf(o.streams.Out, "Wrote %s (its token expires in %s); in the member run:\n  flotilla agent --cluster %s --hub-kubeconfig %s\n", o.agentKubeconfig, o.tokenDuration, o.Name, o.agentKubeconfig)
	}
	if creds.Bootstrap == nil && creds.Agent == nil {
		fmt.Fprintf(o.streams.Out, "No credential for %s's agent was written: join again with --bootstrap-kubeconfig FILE (or --agent-kubeconfig FILE) to get one\n", o.Name)
	}
	if o.wait > 0 {
		fmt.Fprintf(o.streams.Out, "Waiting up to %s for %s's agent to report\n", o.wait, o.Name)
		if err := join.WaitReady(cmd.Context(), host, o.Name, o.wait); err != nil {
			return err
		}
		fmt.Fprintf(o.streams.Out, "%s is Ready\n", o.Name)
	}
	return nil
}

// NewUnjoinCmd returns `flotilla unjoin`.
func NewUnjoinCmd(streams Streams) *cobra.Command {
	o := join.UnjoinOptions{}
	var host hostFlags
	var memberKubeconfig, memberContext string
	cmd := &cobra.Command{
		Use:   "unjoin NAME",
		Short: "Remove a member cluster from the Flotilla control plane",
		Long: `Remove MemberCluster NAME: undo what join did in the member, then delete
the MemberCluster and, if join created it, its Secret from the host.

In the member, unjoin deletes namespace flotilla-system only if join (or the
controller-manager) created it; a namespace that was there before join stays,
with everything else in it, and loses only the claim annotations, the
ServiceAccount flotilla-controller and its token, and the flotilla:controller
ClusterRole and binding. A credentials Secret made by hand stays in the host.

The member is reached with the credentials stored in the host unless
--kubeconfig is given; stored credentials are not used over an insecure
endpoint or from a Secret not bound to the MemberCluster. Nothing is deleted
in a member owned by another control plane or MemberCluster. When the member
cannot be reached, --force removes it from the host anyway.`,
		Example: `  flotilla unjoin prod-east-1
  flotilla unjoin lost-cluster --force`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			cfg, err := host.config()
			if err != nil {
				return err
			}
			o.Host, o.Out = cfg, streams.Out
			if memberKubeconfig != "" {
				if o.Member, err = loadConfig(memberKubeconfig, memberContext); err != nil {
					return fmt.Errorf("member kubeconfig: %w", err)
				}
			}
			if err := join.Unjoin(cmd.Context(), o); err != nil {
				return fmt.Errorf("unjoin %s: %w", o.Name, err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	host.add(fs)
	fs.StringVar(&memberKubeconfig, "kubeconfig", "", "kubeconfig for the member (default: the credentials stored in the host)")
	fs.StringVar(&memberContext, "context", "", "context in the member kubeconfig")
	fs.StringVar(&o.CredentialsNamespace, "credentials-namespace", "flotilla-system", "host namespace of the credentials Secret")
	fs.BoolVar(&o.Force, "force", false, "remove the MemberCluster from the host even if the member cannot be cleaned up")
	return cmd
}

// writePrivate writes a credential readable by its owner only, even over
// an existing file of wider permissions (os.WriteFile keeps those): the
// mode is set before the credential is written.
func writePrivate(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
