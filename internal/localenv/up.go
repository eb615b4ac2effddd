package localenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/components"
)

// ErrAlreadyRunning is returned by Up when the state directory holds a running
// environment; the returned state describes it and nothing was changed.
var ErrAlreadyRunning = errors.New("environment already running")

// readyTimeout bounds the wait for each cluster to become ready.
const readyTimeout = 3 * time.Minute

// Environment is a started environment.
type Environment struct {
	// State describes the environment.
	State *State
	procs []*process
}

// Up starts the environment described by opts and returns once every cluster
// is ready. On failure everything it started is stopped again and the logs
// stay in the state directory. When the state directory already holds a
// running environment, Up changes nothing and returns it with
// ErrAlreadyRunning; when some of its processes died, Up restarts them with
// their recorded arguments.
func Up(ctx context.Context, set components.Set, opts Options) (*Environment, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	dir, err := PrepareStateDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	unlock, err := lockStateDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if st, err := LoadState(dir); err == nil {
		running, total := countAlive(st)
		switch {
		case total > 0 && running == total:
			return &Environment{State: st}, ErrAlreadyRunning
		case running > 0:
			fmt.Fprintf(opts.Out, "Environment in %s is partly running (%d of %d processes); restarting the stopped ones\n", dir, running, total)
			if err := repair(ctx, st, opts); err != nil {
				return nil, fmt.Errorf("%w (run `flotilla down --state-dir %s` and up again to start afresh)", err, dir)
			}
			return &Environment{State: st}, nil
		}
		fmt.Fprintf(opts.Out, "Replacing the stopped environment in %s\n", dir)
		if err := clearState(dir); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, ErrNoEnvironment) {
		return nil, err
	}
	env := &Environment{}
	start := time.Now()
	err = env.start(ctx, set, dir, opts)
	if err != nil {
		err = fmt.Errorf("%w (logs in %s)", err, filepath.Join(dir, "clusters"))
		if stopErr := env.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop the partly started environment: %w", stopErr))
		}
		return nil, err
	}
	fmt.Fprintf(opts.Out, "Environment ready in %s: host + %d member(s)\n", time.Since(start).Round(100*time.Millisecond), opts.Members)
	return env, nil
}

// PrepareStateDir creates the state directory, proves it is writable and
// returns its absolute path.
func PrepareStateDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("state directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("state directory %s is not usable: %w", abs, err)
	}
	f, err := os.CreateTemp(abs, ".probe-*")
	if err != nil {
		return "", fmt.Errorf("state directory %s is not writable: %w", abs, err)
	}
	f.Close()
	os.Remove(f.Name())
	return abs, nil
}

type starter struct {
	set    components.Set
	opts   Options
	st     *State
	mu     sync.Mutex // guards st, procs and output
	procs  *[]*process
	prober *prober
	// gateway is the gateway's URL once it runs: pull agents open their
	// tunnels to it.
	gateway string
}

func (e *Environment) start(ctx context.Context, set components.Set, dir string, opts Options) error {
	ca, err := newAuthority("flotilla-local-ca")
	if err != nil {
		return err
	}
	agentCA, err := newAuthority("flotilla-agent-signer")
	if err != nil {
		return err
	}
	agentCert, agentKey := AgentSignerFiles(dir)
	if err := writeFiles(map[string][]byte{
		filepath.Join(dir, "pki", "ca.crt"): ca.certPEM,
		filepath.Join(dir, "pki", "ca.key"): ca.keyPEM,
		agentCert:                           agentCA.certPEM,
		agentKey:                            agentCA.keyPEM,
		filepath.Join(dir, "pki", "host-client-ca.crt"): append(slices.Clone(ca.certPEM), agentCA.certPEM...),
	}); err != nil {
		return err
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	controllerToken, err := newToken()
	if err != nil {
		return err
	}
	gatewayToken, err := newToken()
	if err != nil {
		return err
	}
	plans := []*clusterPlan{{paths: paths{dir, HostName}, role: RoleHost}}
	for i := 1; i <= opts.Members; i++ {
		plans = append(plans, &clusterPlan{paths: paths{dir, MemberName(i)}, role: RoleMember, mode: opts.MemberMode, index: i})
	}
	n := 0
	for _, p := range plans {
		n += p.portsNeeded()
	}
	free, err := freePorts(n)
	if err != nil {
		return err
	}
	st := &State{Dir: dir, Members: opts.Members, MemberMode: opts.MemberMode, NodesPerMember: opts.NodesPerMember, StartedAt: time.Now().UTC()}
	if opts.MemberMode == ModeAPIServerOnly {
		st.NodesPerMember = 0
	}
	combined := clientcmdapi.NewConfig()
	for _, p := range plans {
		p.assignPorts(free[:p.portsNeeded()])
		free = free[p.portsNeeded():]
		cs, err := p.prepare(ca, token, controllerToken, gatewayToken)
		if err != nil {
			return err
		}
		if err := p.writeStages(set); err != nil {
			return fmt.Errorf("kwok of %s: %w", p.name, err)
		}
		if err := p.prepareMetrics(ca); err != nil {
			return fmt.Errorf("metrics-server of %s: %w", p.name, err)
		}
		st.Clusters = append(st.Clusters, cs)
		addCluster(combined, p.name, p.server(), ca.certPEM, token)
	}
	combined.CurrentContext = HostName
	if err := writeKubeconfig(combined, filepath.Join(dir, "kubeconfig")); err != nil {
		return err
	}
	e.State = st
	if err := st.save(); err != nil {
		return err
	}
	s := &starter{set: set, opts: opts, st: st, procs: &e.procs, prober: newProber(token)}
	fmt.Fprintf(opts.Out, "Starting host and %d %s member(s) in %s\n", opts.Members, opts.MemberMode, dir)
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range plans {
		g.Go(func() error { return s.startCluster(gctx, p, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := grantControllerManager(ctx, plans[0]); err != nil {
		return err
	}
	if opts.Flotilla == "" {
		if opts.PullMembers > 0 {
			return fmt.Errorf("pull members need the flotilla binary (its agent)")
		}
		return nil
	}
	return s.startControlPlane(ctx, plans)
}

// prepare writes the cluster's certificates, tokens and kubeconfig and
// returns its initial state. Every cluster knows the admin (token, group
// system:masters); the host also knows the controller-manager
// (controllerToken) and the gateway (gatewayToken), each as its
// ServiceAccount, whose permissions are only those of its role in
// config/rbac (grantControllerManager).
func (p *clusterPlan) prepare(ca *authority, token, controllerToken, gatewayToken string) (ClusterState, error) {
	cert, key, err := ca.issueServing(p.name)
	if err != nil {
		return ClusterState{}, err
	}
	saKey, saPub, err := newServiceAccountKey()
	if err != nil {
		return ClusterState{}, err
	}
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, adminUser, adminUser)
	if p.role == RoleHost {
		tokens += fmt.Sprintf("%s,%s,%s,\"%s\"\n", controllerToken, rbac.Username, rbac.Username, strings.Join(rbac.Groups, ","))
		if err := writeKubeconfig(controllerKubeconfigFor(p.name, p.server(), ca.certPEM, controllerToken), p.controllerKubeconfig()); err != nil {
			return ClusterState{}, err
		}
		webhookCert, webhookKey, err := ca.issueServing(ControllerManager)
		if err != nil {
			return ClusterState{}, err
		}
		if err := writeFiles(map[string][]byte{
			p.pki(filepath.Join(webhookCertDir, "tls.crt")): webhookCert,
			p.pki(filepath.Join(webhookCertDir, "tls.key")): webhookKey,
		}); err != nil {
			return ClusterState{}, err
		}
		line, err := p.prepareGateway(ca, gatewayToken)
		if err != nil {
			return ClusterState{}, err
		}
		tokens += line
	}
	if err := writeFiles(map[string][]byte{
		p.pki("apiserver.crt"): cert,
		p.pki("apiserver.key"): key,
		p.pki("sa.key"):        saKey,
		p.pki("sa.pub"):        saPub,
		p.pki("tokens.csv"):    []byte(tokens),
	}); err != nil {
		return ClusterState{}, err
	}
	if err := writeKubeconfig(kubeconfigFor(p.name, p.server(), ca.certPEM, token), p.kubeconfig()); err != nil {
		return ClusterState{}, err
	}
	if err := p.prepareKwok(ca); err != nil {
		return ClusterState{}, fmt.Errorf("kwok of %s: %w", p.name, err)
	}
	cs := ClusterState{Name: p.name, Role: p.role, Mode: p.mode, Server: p.server(), Kubeconfig: p.kubeconfig()}
	if p.role == RoleHost {
		cs.ControllerKubeconfig = p.controllerKubeconfig()
	}
	if p.role == RoleMember {
		region, zone := MemberTopology(p.index)
		cs.Labels = map[string]string{LabelRegion: region, LabelZone: zone}
	}
	return cs, nil
}

// startCluster starts one cluster's components in order and waits for each.
func (s *starter) startCluster(ctx context.Context, p *clusterPlan, idx int) error {
	begin := time.Now()
	var procs []*process
	crashed := func() error {
		for _, pr := range procs {
			if err := pr.exited(); err != nil {
				return err
			}
		}
		return nil
	}
	launch := func(name string) (*process, error) {
		c, args := p.component(s.set, name)
		c.Args = args
		pr, err := startProcess(c, args, s.opts.Detach)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		procs = append(procs, pr)
		s.record(idx, pr)
		return pr, nil
	}
	waitHealthy := func(pr *process) error {
		return waitFor(ctx, p.name+" "+pr.state.Name, readyTimeout, crashed, func(ctx context.Context) error {
			return s.prober.probe(ctx, pr.state.HealthURL)
		})
	}
	names := p.componentNames()
	// etcd, then the apiserver: everything else talks to the apiserver.
	for _, name := range names[:2] {
		pr, err := launch(name)
		if err != nil {
			return err
		}
		if err := waitHealthy(pr); err != nil {
			return err
		}
	}
	var rest []*process
	for _, name := range names[2:] {
		pr, err := launch(name)
		if err != nil {
			return err
		}
		rest = append(rest, pr)
	}
	if p.role == RoleMember && p.mode == ModeFull {
		if err := s.readyNodes(ctx, p, crashed); err != nil {
			return err
		}
	}
	for _, pr := range rest {
		if err := waitHealthy(pr); err != nil {
			return err
		}
	}
	s.printf("  %-10s ready in %s (%s)\n", p.name, time.Since(begin).Round(100*time.Millisecond), strings.Join(names, ", "))
	return nil
}

// readyNodes registers the member's fake nodes and waits until pods can be
// scheduled onto them and created in the default namespace; it registers
// metrics.k8s.io too (metrics.go).
func (s *starter) readyNodes(ctx context.Context, p *clusterPlan, crashed func() error) error {
	cfg, err := RESTConfig(p.kubeconfig())
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	region, zone := MemberTopology(p.index)
	nodes := fakeNodes(nodeSpec{
		member: p.name, count: s.opts.NodesPerMember,
		cpu: s.opts.NodeCPU, memory: s.opts.NodeMemory, pods: s.opts.NodePods,
		region: region, zone: zone, extraLabels: s.opts.NodeLabels,
	})
	if err := createNodes(ctx, cs, nodes); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	if err := waitFor(ctx, p.name+" nodes", readyTimeout, crashed, func(ctx context.Context) error {
		return nodesSchedulable(ctx, cs, len(nodes))
	}); err != nil {
		return err
	}
	if p.runsMetrics() {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		caPEM, err := os.ReadFile(p.caCert())
		if err != nil {
			return err
		}
		if err := registerMetrics(ctx, cs, dyn, p.ports.metrics, caPEM); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return waitFor(ctx, p.name+" default ServiceAccount", readyTimeout, crashed, func(ctx context.Context) error {
		return defaultServiceAccount(ctx, cs)
	})
}

// record adds a started process to the environment and persists its pid, so
// that `flotilla down` can stop a half-started environment.
func (s *starter) record(idx int, pr *process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.procs = append(*s.procs, pr)
	s.st.Clusters[idx].Components = append(s.st.Clusters[idx].Components, pr.state)
	if err := s.st.save(); err != nil {
		fmt.Fprintf(s.opts.Out, "warning: %v\n", err)
	}
}

func (s *starter) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.opts.Out, format, args...)
}

// Stop stops every process of the environment, cluster by cluster in
// reverse start order (an apiserver exits before its etcd, which would
// otherwise wait for the apiserver's watches to close), and reaps them.
func (e *Environment) Stop() error {
	if e.State == nil {
		return nil
	}
	_, err := stopAll(e.State)
	for _, pr := range e.procs {
		<-pr.done
	}
	return err
}

func writeFiles(files map[string][]byte) error {
	for path, b := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}
