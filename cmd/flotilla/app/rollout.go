package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-io/flotilla/internal/rolloutctl"
)

// RolloutOptions are the inputs of `flotilla rollout approve|resume|abort`.
type RolloutOptions struct {
	// Namespace is the workload's namespace (default: the kubeconfig
	// context's, else "default").
	Namespace string
	// Workload is the argument: NAME (a Deployment) or KIND/NAME.
	Workload string
	// Stage, for approve, is the stage whose gate to open (default: the
	// gate the rollout waits at).
	Stage string

	verb    string
	host    hostFlags
	target  rolloutctl.Workload
	streams Streams
}

// NewRolloutCmd returns `flotilla rollout` and its verbs.
func NewRolloutCmd(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Drive a staged federated rollout: approve, resume, abort",
		Long: `Drive the federated rollout of a workload divided over clusters
(docs/rollouts.md): a Deployment (NAME or deployment/NAME), a StatefulSet
(statefulset/NAME, sts/NAME) or an object of a custom kind whose
WorkloadInterpreter has a rollout rule (cloneset/NAME,
clonesets.apps.kruise.io/NAME). Where the rollout stands is in its
FederatedObject: kubectl get fo NAME.deployment.apps shows the ROLLOUT
reason (Progressing, AwaitingApproval, StagePaused, Halted, RolledOut) and
its RolledOut condition says which stage and clusters.

Each verb records the decision on the host object, so it needs only the
rights to patch that object; kubectl rollout status, pause, resume,
history and undo work on the host Deployment as on one cluster.`,
	}
	cmd.AddCommand(
		newRolloutVerb(streams, "approve", &cobra.Command{
			Use:   "approve [KIND/]NAME",
			Short: "Start the next stage of a rollout waiting for approval",
			Long: `Approve the Approval gate the rollout waits at (or, with --stage, the gate
after that stage, ahead of time), for the revision rolling now: the
annotation flotilla.io/rollout-approved=<revision>/<stage> on the
workload. A new template needs its own approval. A stage the rollout does
not have is refused, and so is one before a stage already approved for the
same revision (when the policy can be read to order them).`,
			Example: `  flotilla rollout approve web -n shop
  flotilla rollout approve deployment/web -n shop --stage canary
  flotilla rollout approve sts/db -n shop
  flotilla rollout approve cloneset.apps.kruise.io/web -n shop`,
		}),
		newRolloutVerb(streams, "resume", &cobra.Command{
			Use:   "resume [KIND/]NAME",
			Short: "Let a halted rollout go on, or end a stage's pause early",
			Long: `Resume the revision rolling now past the halt of the stage it is at (a
copy exceeded its progress deadline, or the stage's availability fell below
minAvailablePercent), or through that stage's Pause gate early: the
annotation flotilla.io/rollout-resumed=<revision>/<stage>. That stage (and
those before it) does not halt this revision again; later stages still halt
and pause. Not the same as kubectl rollout resume, which unpauses a paused
Deployment.`,
			Example: `  flotilla rollout resume web -n shop
  flotilla rollout resume statefulset/db -n shop`,
		}),
		newRolloutVerb(streams, "abort", &cobra.Command{
			Use:   "abort [deployment/]NAME",
			Short: "Go back to the previous revision of a Deployment",
			Long: `Abort the rollout: put the previous revision's pod template back into the
Deployment (as kubectl rollout undo does), which rolls out under the same
budget. Clusters of later stages, which still hold their old pods, are done
at once; the others roll back. Deployments only: the host keeps no revision
history of StatefulSets or custom kinds (apply the previous template
instead).`,
			Example: `  flotilla rollout abort web -n shop`,
		}),
	)
	return cmd
}

func newRolloutVerb(streams Streams, verb string, cmd *cobra.Command) *cobra.Command {
	o := &RolloutOptions{verb: verb, streams: streams}
	cmd.Args = cobra.ExactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
	fs := cmd.Flags()
	o.host.add(fs)
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "the workload's namespace (default: the context's)")
	if verb == "approve" {
		fs.StringVar(&o.Stage, "stage", "", "the stage whose gate to open (default: the one the rollout waits at)")
	}
	return cmd
}

// Complete reads the workload argument and builds the host client.
func (o *RolloutOptions) Complete(args []string) error {
	o.Workload = args[0]
	if o.Namespace == "" {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.host.kubeconfig
		ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.host.context}).Namespace()
		if err != nil || ns == "" {
			ns = "default"
		}
		o.Namespace = ns
	}
	return nil
}

// Validate refuses bad input before anything is changed or read.
func (o *RolloutOptions) Validate() error {
	if o.Workload == "" {
		return errors.New("a workload is required: NAME (a Deployment) or KIND/NAME")
	}
	return nil
}

// resolve builds the host client and reads the workload's kind through
// the host's discovery.
func (o *RolloutOptions) resolve() error {
	cfg, err := o.host.config()
	if err != nil {
		return err
	}
	c, err := o.host.client()
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client for the host: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	warn := func(msg string) { fmt.Fprintln(o.streams.ErrOut, "Warning:", msg) }
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, warn)
	t, err := rolloutctl.Resolve(mapper, o.Workload)
	if err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: o.Namespace, Name: t.Name}
	if !t.Namespaced {
		key.Namespace = ""
	}
	o.target = rolloutctl.Workload{Client: c, Kind: t.Kind, Key: key}
	return nil
}

// Run records the decision and prints what it did.
func (o *RolloutOptions) Run(ctx context.Context) error {
	if err := o.resolve(); err != nil {
		return err
	}
	var msg string
	var err error
	switch o.verb {
	case "approve":
		msg, err = o.target.Approve(ctx, o.Stage)
	case "resume":
		msg, err = o.target.Resume(ctx)
	case "abort":
		msg, err = o.target.Abort(ctx)
	default:
		return fmt.Errorf("unknown verb %q", o.verb)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(o.streams.Out, msg)
	return nil
}
