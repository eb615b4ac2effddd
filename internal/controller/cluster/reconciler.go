package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/applied"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/pull"
	"github.com/flotilla-io/flotilla/internal/ratelimit"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
)

// Name is the controller's name for --controllers.
const Name = "cluster"

// Reconciler keeps MemberClusters' status and managed taints true to their
// members.
type Reconciler struct {
	// Client reads and writes the host.
	Client client.Client
	// Recorder records events on MemberClusters.
	Recorder events.EventRecorder
	// CredentialsNamespace holds the credentials Secrets.
	CredentialsNamespace string
	// Session tunes the member sessions.
	Session member.Options
	// MaxConcurrentReconciles bounds parallel reconciles (default 4).
	MaxConcurrentReconciles int
	// Ledger, when set, is the scheduler's ledger, whose reservations in
	// each member status.resources.reserved shows.
	Ledger *ledger.Ledger
	// Pool holds the member sessions; the propagation controllers share it.
	// Nil makes a private one.
	Pool *member.Pool
	// Failover tunes the NoExecute taints of members that stay not Ready.
	Failover Failover
	// AllowInsecure lets members be reached over plain http or without
	// verifying their serving certificate (--allow-insecure-members); such
	// members are reported by a condition, an event, a log line and a
	// metric. When false they are refused.
	AllowInsecure bool
	// TokenRenewal is the fraction of a push member token's lifetime after
	// which it is renewed (default DefaultTokenRenewal).
	TokenRenewal float64
	// SignerConfigured says whether the controller-manager signs agent
	// certificates (the agent-signer controller runs); the Accepted
	// condition of an accepted pull member says so when it does not.
	SignerConfigured bool
	// APIReader reads the host without a cache (the control plane's id);
	// nil takes the manager's.
	APIReader client.Reader
	// HostConfig reaches the host as the controller-manager, for the pull
	// sessions' caches; nil takes the manager's.
	HostConfig *rest.Config

	events        chan event.GenericEvent
	tokens        sync.Map // cluster name → *member.Token of its session
	renewed       sync.Map // cluster name → when its token renewal was last tried
	renewFailure  sync.Map // cluster name → the error of its last failed renewal (one event per change)
	held          sync.Map // cluster name → the reason its eviction is held back
	brakeMu       sync.Mutex
	clusterBucket *ratelimit.Bucket // NoExecute taints per minute
	zones         map[string]bool   // failure domains in the zone-state metric
	idMu          sync.Mutex
	id            string // the control plane's id, once read
}

// SetupWithManager registers the controller and the shutdown of all member
// sessions with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.CredentialsNamespace == "" {
		r.CredentialsNamespace = v1alpha1.SystemNamespace
	}
	if r.Pool == nil {
		r.Pool = member.NewPool()
	}
	r.Failover = r.Failover.withDefaults()
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.HostConfig == nil {
		r.HostConfig = mgr.GetConfig()
	}
	r.Pool.OnChange = func(n int) { sessionsGauge.Set(float64(n)) }
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.MemberCluster{}, secretRefIndex, func(o client.Object) []string {
		if ref := o.(*v1alpha1.MemberCluster).Spec.SecretRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index MemberClusters by Secret: %w", err)
	}
	r.events = make(chan event.GenericEvent, 256)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.Pool.StopAll()
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.MemberCluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.clustersForSecret)).
		Watches(&certificatesv1.CertificateSigningRequest{}, handler.EnqueueRequestsFromMapFunc(clusterOfRequest)).
		WatchesRawSource(source.Channel(r.events, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 4)}).
		Complete(r)
}

// Sessions returns the names of the members with a live session.
func (r *Reconciler) Sessions() []string { return r.Pool.Names() }

// Reconcile brings one MemberCluster's status and taints up to date.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mc := &v1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Pool.Stop(req.Name)
			r.tokens.Delete(req.Name)
			r.renewed.Delete(req.Name)
			r.renewFailure.Delete(req.Name)
			readyGauge.DeleteLabelValues(req.Name)
			insecureGauge.DeleteLabelValues(req.Name)
			r.forgetHeld(req.Name)
			return r.releaseIntents(ctx, req.Name)
		}
		return reconcile.Result{}, err
	}
	if !mc.DeletionTimestamp.IsZero() {
		r.Pool.Stop(mc.Name)
		r.tokens.Delete(mc.Name)
		r.renewed.Delete(mc.Name)
		r.renewFailure.Delete(mc.Name)
		readyGauge.DeleteLabelValues(mc.Name)
		insecureGauge.DeleteLabelValues(mc.Name)
		return r.releaseIntents(ctx, mc.Name)
	}
	snap, insecure, err := r.observe(ctx, mc)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := time.Now()
	view := viewOf(snap)
	plan, held, recheck, err := r.evictionPlan(ctx, mc, view, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	taints, next := renderTaints(mc.Spec.Taints, view, plan, now)
	if !equality.Semantic.DeepEqual(taints, mc.Spec.Taints) {
		before := mc.Spec.Taints
		mc.Spec.Taints = taints
		if err := r.Client.Update(ctx, mc); err != nil {
			if plan.tookToken && !applied.Maybe(err) {
				// Refused: no taint was written. One that may have been
				// (a timeout) keeps the token: the brake errs on the slow
				// side.
				r.returnClusterToken()
			}
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: conflictRetry}, nil // changed meanwhile: start over
			}
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil // deleted meanwhile: its delete event stops the session
			}
			return reconcile.Result{}, fmt.Errorf("update taints of %s: %w", mc.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Updated managed taints", "taints", taints)
		if plan.restartGrace && r.Recorder != nil {
			r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, "GracePeriodRestarted", "Failover", "%s", graceRestartedMessage(plan.grace))
		}
		// A pull member not accepted is tainted NoExecute at once: an
		// admin's decision, not a failover, so no eviction is counted.
		if t := addedNoExecute(before, taints); t != nil && !pending(mc) {
			evictionsTotal.WithLabelValues(mc.Name).Inc()
			msg := evictionMessage(t, notReadySince(mc.Status.Conditions, before, now), now)
			ctrl.LoggerFrom(ctx).Info("Evicting", "taint", t.Key, "message", msg)
			if r.Recorder != nil {
				r.Recorder.Eventf(mc, nil, corev1.EventTypeWarning, "Evicting", "Failover", "%s", msg)
			}
		}
	}
	r.setHeld(mc, held)
	result := reconcile.Result{RequeueAfter: next}
	if recheck > 0 {
		// Eviction held back by a brake: look again when it may end.
		result.RequeueAfter = recheck
	}
	if renew := r.renewToken(ctx, mc, now); renew > 0 && (result.RequeueAfter == 0 || renew < result.RequeueAfter) {
		result.RequeueAfter = renew
	}
	// Rendered after the taint update, so that the status records the
	// generation that update produced and one write covers both.
	status := renderStatus(mc, snap, now)
	if snap.SummaryKnown {
		status.Resources.Reserved = r.reserved(mc.Name)
		if status.Resources.Reserved != nil && (result.RequeueAfter == 0 || result.RequeueAfter > reservedRefresh) {
			// Reservations also end by timing out, which no event tells.
			result.RequeueAfter = reservedRefresh
		}
	}
	renderInsecure(&status, insecure, mc.Generation, now)
	if err := r.renderAccepted(ctx, &status, mc, now); err != nil {
		return reconcile.Result{}, err
	}
	renderHeld(&status, held, mc.Generation, now)
	observeReady(mc.Name, status)
	if equality.Semantic.DeepEqual(status, mc.Status) {
		return result, nil
	}
	before := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
	mc.Status = status
	if err := r.Client.Status().Update(ctx, mc); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("update status of %s: %w", mc.Name, err)
	}
	r.recordTransition(mc, before)
	return result, nil
}

// reservedRefresh is how often a member's reservations are looked at
// again while it has some.
const reservedRefresh = 15 * time.Second

// reserved returns what the ledger reserves in a push member, counted
// against its bound pods now.
func (r *Reconciler) reserved(cluster string) corev1.ResourceList {
	if r.Ledger == nil {
		return nil
	}
	var list corev1.ResourceList
	estimate.PoolMembers{Pool: r.Pool}.EstimateNodes(cluster, func(n member.Nodes) {
		v, replicas := r.Ledger.Reserved(cluster, "", n.Bound, n.Version())
		list = ledger.Total{Replicas: replicas, Resources: v}.ResourceList()
	})
	return list
}

// observe makes sure a session runs for mc with its current configuration
// and returns what it knows, and what makes its connection insecure when
// that is allowed. Problems that prevent a session (Pull mode, a missing,
// unusable or unbound Secret, a refused insecure endpoint) are returned as
// a committed health.
func (r *Reconciler) observe(ctx context.Context, mc *v1alpha1.MemberCluster) (member.Snapshot, []string, error) {
	unusable := func(reason, msg string) (member.Snapshot, []string, error) {
		r.Pool.Stop(mc.Name)
		r.tokens.Delete(mc.Name)
		insecureGauge.WithLabelValues(mc.Name).Set(0)
		return member.Snapshot{HealthKnown: true, Health: member.Observation{Health: member.NotReady, Reason: reason, Message: msg, At: time.Now()}}, nil, nil
	}
	if mc.Spec.SyncMode == v1alpha1.SyncModePull {
		insecureGauge.WithLabelValues(mc.Name).Set(0)
		if !mc.Spec.Accepted {
			return unusable(pull.ReasonNotAccepted, "the pull member is not accepted: its agent gets no certificate and it gets no workloads until a hub admin runs `flotilla accept "+mc.Name+"` (see the Accepted condition)")
		}
		snap, err := r.observePull(ctx, mc)
		return snap, nil, err
	}
	if mc.Spec.SecretRef == nil {
		return unusable(member.ReasonSecretNotFound, "spec.secretRef is not set")
	}
	insecure := member.Insecurities(mc)
	if len(insecure) > 0 && !r.AllowInsecure {
		return unusable(member.ReasonInsecureEndpoint, "refused: "+strings.Join(insecure, "; ")+
			": use an https endpoint and put the CA that signs the member's serving certificate in the Secret (key ca.crt); only for tests, start the controller-manager with --allow-insecure-members")
	}
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: r.CredentialsNamespace, Name: mc.Spec.SecretRef.Name}
	if err := r.Client.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return unusable(member.ReasonSecretNotFound, fmt.Sprintf("Secret %s not found: create it with the member's credentials (key %q, or %q and %q) and label it %s=%s",
				key, member.KeyToken, member.KeyClientCert, member.KeyClientKey, v1alpha1.LabelMemberCluster, mc.Name))
		}
		return member.Snapshot{}, nil, err
	}
	if err := member.CheckBinding(mc, secret); err != nil {
		return unusable(member.ReasonCredentialsNotBound, err.Error())
	}
	hash := member.ConfigHash(mc, secret)
	if s := r.Pool.Current(mc.Name); s != nil && s.ConfigHash() == hash {
		// A renewed or replaced token is taken in place.
		if tok := r.tokenOf(mc.Name); tok != nil && len(secret.Data[member.KeyToken]) > 0 {
			tok.Set(string(secret.Data[member.KeyToken]))
		}
		return s.Snapshot(), insecure, nil
	}
	cfg, tok, err := member.RESTConfigWithToken(mc, secret)
	if err != nil {
		if errors.Is(err, member.ErrInvalidCredentials) {
			return unusable(member.ReasonInvalidCredentials, err.Error())
		}
		return unusable(member.ReasonInvalidCredentials, "cannot build a client: "+err.Error())
	}
	id, err := r.controlPlaneID(ctx)
	if err != nil {
		return member.Snapshot{}, nil, err
	}
	name := mc.Name
	notify := r.notifier(name)
	logger := ctrl.Log.WithName("member").WithValues("cluster", name) // sessions log with it too
	claim := &member.Claim{ControlPlaneID: id, Cluster: name}
	s, err := r.Pool.Start(ctrl.LoggerInto(context.Background(), logger), name, hash, cfg, r.Session, initialHealth(mc), claim, notify)
	if err != nil {
		return member.Snapshot{}, nil, err
	}
	if tok != nil {
		r.tokens.Store(name, tok)
	} else {
		r.tokens.Delete(name)
	}
	logger.Info("Started member session", "endpoint", mc.Spec.APIEndpoint)
	r.reportInsecure(mc, insecure, logger)
	return s.Snapshot(), insecure, nil
}

// reportInsecure makes an allowed insecure connection loud: a log line and
// a Warning event at each new session, and the metric.
func (r *Reconciler) reportInsecure(mc *v1alpha1.MemberCluster, insecure []string, logger klog.Logger) {
	if len(insecure) == 0 {
		insecureGauge.WithLabelValues(mc.Name).Set(0)
		return
	}
	insecureGauge.WithLabelValues(mc.Name).Set(1)
	msg := insecureMessage(insecure)
	logger.Info("INSECURE member connection, allowed by --allow-insecure-members", "problems", insecure)
	if r.Recorder != nil {
		r.Recorder.Eventf(mc, nil, corev1.EventTypeWarning, reasonInsecureAllowed, "Connect", "%s", msg)
	}
}

// controlPlaneID returns this control plane's id (the UID of the host's
// kube-system namespace, as `flotilla join` records it), read once.
func (r *Reconciler) controlPlaneID(ctx context.Context) (string, error) {
	r.idMu.Lock()
	defer r.idMu.Unlock()
	if r.id != "" {
		return r.id, nil
	}
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("identify the control plane (read namespace %s): %w", metav1.NamespaceSystem, err)
	}
	r.id = string(ns.UID)
	return r.id, nil
}

// recordTransition emits an event when the Ready condition changed status
// or reason.
func (r *Reconciler) recordTransition(mc *v1alpha1.MemberCluster, before *metav1.Condition) {
	after := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
	if after == nil || r.Recorder == nil {
		return
	}
	if before != nil && before.Status == after.Status && before.Reason == after.Reason {
		return
	}
	kind := corev1.EventTypeWarning
	if after.Status == metav1.ConditionTrue {
		kind = corev1.EventTypeNormal
	}
	r.Recorder.Eventf(mc, nil, kind, after.Reason, "Probe", "Ready=%s: %s", after.Status, after.Message)
}

// secretRefIndex indexes MemberClusters by the name of their Secret.
const secretRefIndex = "spec.secretRef.name"

// clustersForSecret maps a credentials Secret to the MemberClusters using it.
func (r *Reconciler) clustersForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() != r.CredentialsNamespace {
		return nil
	}
	list := &v1alpha1.MemberClusterList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List MemberClusters for Secret", "secret", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, mc := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: mc.Name}})
	}
	return reqs
}

// conflictRetry is how soon a reconcile that lost an update race retries.
const conflictRetry = 200 * time.Millisecond

// observeReady exports the Ready condition as a metric.
func observeReady(name string, st v1alpha1.MemberClusterStatus) {
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	switch {
	case c == nil:
		return
	case c.Status == metav1.ConditionTrue:
		readyGauge.WithLabelValues(name).Set(1)
	case c.Status == metav1.ConditionFalse:
		readyGauge.WithLabelValues(name).Set(0)
	default:
		readyGauge.WithLabelValues(name).Set(-1)
	}
}
