package localenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/member"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

// ControllerManager is the component name of `flotilla controller-manager`
// in the host's component list.
const ControllerManager = "flotilla-controller-manager"

// startControlPlane starts `flotilla controller-manager` and `flotilla
// gateway` against the host, joins every member to it and waits until all
// are Ready.
func (s *starter) startControlPlane(ctx context.Context, plans []*clusterPlan) error {
	begin := time.Now()
	host := plans[0]
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	c := host.controllerManager(s.opts.Flotilla, ports)
	pr, err := startProcess(c, c.Args, s.opts.Detach)
	if err != nil {
		return err
	}
	s.record(0, pr)
	if err := waitFor(ctx, ControllerManager, readyTimeout, pr.exited, func(ctx context.Context) error {
		return s.prober.probe(ctx, c.HealthURL)
	}); err != nil {
		return err
	}
	if err := s.startGateway(ctx, host); err != nil {
		return err
	}
	hostCfg, err := RESTConfig(host.kubeconfig())
	if err != nil {
		return err
	}
	pull := 0
	for i, p := range plans[1:] {
		labels := s.st.Clusters[i+1].Labels
		if s.opts.IsPull(p.index) {
			if err := s.joinPull(ctx, hostCfg, p, labels, i+1); err != nil {
				return err
			}
			pull++
			continue
		}
		if err := s.joinMember(ctx, hostCfg, p, labels); err != nil {
			return err
		}
	}
	for _, p := range plans[1:] {
		if err := join.WaitReady(ctx, hostCfg, p.name, readyTimeout); err != nil {
			return fmt.Errorf("%w (controller-manager log: %s)", err, c.Log)
		}
	}
	s.printf("  %-10s ready in %s (%s, %d member(s) joined, %d of them in pull mode)\n", "control plane", time.Since(begin).Round(100*time.Millisecond), ControllerManager, len(plans)-1, pull)
	return nil
}

// leaderIdentity is the controller-manager's name in its leader election
// Lease. The host control plane is the environment's own and runs one
// controller-manager at a time, so the name needs no suffix.
const leaderIdentity = "flotilla-up"

// controllerManager renders the controller-manager's component on the host
// (binary, ports: metrics, probes, pprof): it runs as its own identity,
// never the admin, and signs pull agents' certificates with the
// environment's agent CA.
func (p *clusterPlan) controllerManager(binary string, ports []int) ComponentState {
	agentCert, agentKey := AgentSignerFiles(p.stateDir)
	c := ComponentState{
		Name: ControllerManager, Binary: binary, Port: ports[1], Ports: ports,
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]),
		Log:       p.log(ControllerManager),
		Args: []string{
			"controller-manager",
			"--kubeconfig=" + p.controllerKubeconfig(),
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
			fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", ports[2]),
			// One controller-manager per environment, restarted only when
			// dead (see restart): a restarted one resumes its own lease.
			"--leader-elect-identity=" + leaderIdentity,
			"--agent-signing-cert-file=" + agentCert,
			"--agent-signing-key-file=" + agentKey,
		},
	}
	// WorkloadInterpreters are validated at admission by the
	// controller-manager, with a certificate from the environment's CA
	// (an environment created before there was one goes without).
	if _, err := os.Stat(p.pki(filepath.Join(webhookCertDir, "tls.crt"))); err == nil && len(ports) > 3 {
		c.Args = append(c.Args,
			fmt.Sprintf("--webhook-port=%d", ports[3]),
			"--webhook-bind-host=127.0.0.1",
			"--webhook-cert-dir="+p.pki(webhookCertDir),
			fmt.Sprintf("--webhook-url=https://127.0.0.1:%d", ports[3]),
			"--webhook-ca-file="+p.caCert(),
		)
	}
	return c
}

// webhookCertDir is the directory (under the host's pki) of the
// controller-manager's webhook serving certificate.
const webhookCertDir = "controller-manager-webhook"

// grantControllerManager gives the controller-manager's identity in the
// host its permissions, as the admin: the namespace flotilla-system, the
// ServiceAccount, the generated ClusterRole and Role and their bindings
// (config/rbac). The optional grants (Secrets in every namespace) are not
// applied.
func grantControllerManager(ctx context.Context, host *clusterPlan) error {
	cfg, err := RESTConfig(host.kubeconfig())
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rbac.Namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%s: create namespace %s: %w", host.name, rbac.Namespace, err)
	}
	if err := rbac.Apply(ctx, cfg, rbac.RoleFile, rbac.BindingFile, rbac.AgentFile, rbac.GatewayFile); err != nil {
		return fmt.Errorf("%s: grant the controller-manager its role: %w", host.name, err)
	}
	return nil
}

// joinMember joins a full member with `flotilla join`'s code. A member
// without kube-controller-manager cannot issue a ServiceAccount token, so
// it is registered the plain way instead: a Secret with the admin token and
// a MemberCluster.
func (s *starter) joinMember(ctx context.Context, hostCfg *rest.Config, p *clusterPlan, labels map[string]string) error {
	memberCfg, err := RESTConfig(p.kubeconfig())
	if err != nil {
		return err
	}
	if p.mode == ModeFull {
		if err := join.Join(ctx, join.Options{Name: p.name, Host: hostCfg, Member: memberCfg, Labels: labels}); err != nil {
			return fmt.Errorf("join %s: %w", p.name, err)
		}
		return nil
	}
	return registerDirect(ctx, hostCfg, p.name, memberCfg, labels)
}

// registerDirect creates the credentials Secret and the MemberCluster
// without touching the member.
func registerDirect(ctx context.Context, hostCfg *rest.Config, name string, memberCfg *rest.Config, labels map[string]string) error {
	cs, err := kubernetes.NewForConfig(hostCfg)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha1.SystemNamespace, Labels: map[string]string{v1alpha1.LabelMemberCluster: name}},
		Data:       map[string][]byte{member.KeyToken: []byte(memberCfg.BearerToken), member.KeyCACert: memberCfg.CAData},
	}
	if _, err := cs.CoreV1().Secrets(secret.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register %s: %w", name, err)
	}
	scheme, err := hostscheme.New()
	if err != nil {
		return err
	}
	c, err := client.New(hostCfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	mc := &v1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       v1alpha1.MemberClusterSpec{APIEndpoint: memberCfg.Host, SecretRef: &v1alpha1.SecretReference{Name: name}},
	}
	if err := c.Create(ctx, mc); err != nil {
		return fmt.Errorf("register %s: %w", name, err)
	}
	return nil
}
