package localenv

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-io/flotilla/internal/components"
)

func TestComponentNames(t *testing.T) {
	tests := []struct {
		name string
		plan clusterPlan
		want []string
	}{
		{"host", clusterPlan{role: RoleHost}, []string{"etcd", "kube-apiserver", "kube-controller-manager"}},
		{"full member", clusterPlan{role: RoleMember, mode: ModeFull}, []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "metrics-server"}},
		{"apiserver-only member", clusterPlan{role: RoleMember, mode: ModeAPIServerOnly}, []string{"etcd", "kube-apiserver"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.plan.componentNames()); diff != "" {
				t.Errorf("componentNames() mismatch (-want +got):\n%s", diff)
			}
			if got, want := tt.plan.portsNeeded(), len(tt.want)+1; got != want {
				t.Errorf("portsNeeded() = %d, want %d", got, want)
			}
		})
	}
}

func TestAssignPortsGivesEveryComponentItsOwnPort(t *testing.T) {
	p := clusterPlan{paths: paths{"/s", "member-1"}, role: RoleMember, mode: ModeFull, index: 1}
	p.assignPorts([]int{10, 11, 12, 13, 14, 15, 16})
	want := portSet{etcdClient: 10, etcdPeer: 11, apiserver: 12, controllerManager: 13, scheduler: 14, kwok: 15, metrics: 16}
	if p.ports != want {
		t.Errorf("ports = %+v, want %+v", p.ports, want)
	}
}

func TestComponentArgs(t *testing.T) {
	set := components.Set{Dir: "/bin/c"}
	host := clusterPlan{paths: paths{"/s", "host"}, role: RoleHost}
	host.assignPorts([]int{1, 2, 3, 4})
	member := clusterPlan{paths: paths{"/s", "member-2"}, role: RoleMember, mode: ModeFull, index: 2}
	member.assignPorts([]int{11, 12, 13, 14, 15, 16, 17})

	tests := []struct {
		name      string
		plan      clusterPlan
		component string
		wantArgs  []string // each must be present
		wantNot   []string // prefixes that must be absent
		wantPort  int
		wantURL   string
	}{
		{
			name: "host controller-manager runs only namespace and GC", plan: host, component: components.KubeControllerManager,
			wantArgs: []string{"--controllers=namespace-controller,garbage-collector-controller,clusterrole-aggregation-controller", "--secure-port=4", "--leader-elect=false"},
			wantPort: 4, wantURL: "https://127.0.0.1:4/healthz",
		},
		{
			name: "member controller-manager runs the defaults", plan: member, component: components.KubeControllerManager,
			wantArgs: []string{"--controllers=*", "--cluster-name=member-2", "--kubeconfig=/s/clusters/member-2/kubeconfig"},
			wantPort: 14, wantURL: "https://127.0.0.1:14/healthz",
		},
		{
			name: "apiserver", plan: member, component: components.KubeAPIServer,
			wantArgs: []string{"--etcd-servers=http://127.0.0.1:11", "--secure-port=13", "--authorization-mode=RBAC", "--client-ca-file=/s/pki/ca.crt", "--token-auth-file=/s/clusters/member-2/pki/tokens.csv",
				"--requestheader-client-ca-file=/s/clusters/member-2/pki/front-proxy-ca.crt", "--proxy-client-cert-file=/s/clusters/member-2/pki/front-proxy-client.crt"},
			wantPort: 13, wantURL: "https://127.0.0.1:13/readyz",
		},
		{
			name: "etcd", plan: host, component: components.Etcd,
			wantArgs: []string{"--data-dir=/s/clusters/host/etcd", "--listen-client-url=http://127.0.0.1:1", "--listen-peer-url=http://127.0.0.1:2"},
			wantPort: 1, wantURL: "http://127.0.0.1:1/health",
		},
		{
			name: "kwok manages only annotated nodes with the module's stages", plan: member, component: components.Kwok,
			wantArgs: []string{"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--server-address=127.0.0.1:16", "--config=/s/clusters/member-2/kwok/pod-ready.yaml", "--config=/bin/c/stages/node-heartbeat-with-lease.yaml", "--config=/bin/c/stages/metrics-resource.yaml", "--config=/bin/c/stages/usage-from-annotation.yaml"},
			wantPort: 16, wantURL: "https://127.0.0.1:16/healthz",
		},
		{
			name: "metrics-server scrapes kwok's nodes at their status port", plan: member, component: components.MetricsServer,
			wantArgs: []string{"--secure-port=17", "--kubeconfig=/s/clusters/member-2/kubeconfig", "--kubelet-use-node-status-port", "--kubelet-insecure-tls", "--tls-cert-file=/s/clusters/member-2/pki/metrics-server.crt"},
			wantPort: 17, wantURL: "https://127.0.0.1:17/livez",
		},
		{
			name: "host apiserver aggregates nothing", plan: host, component: components.KubeAPIServer,
			wantNot:  []string{"--requestheader", "--proxy-client"},
			wantPort: 3, wantURL: "https://127.0.0.1:3/readyz",
		},
		{
			name: "scheduler", plan: member, component: components.KubeScheduler,
			wantArgs: []string{"--secure-port=15", "--cert-dir=/s/clusters/member-2/certs/kube-scheduler"},
			wantNot:  []string{"--controllers"},
			wantPort: 15, wantURL: "https://127.0.0.1:15/healthz",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, args := tt.plan.component(set, tt.component)
			for _, w := range tt.wantArgs {
				if !slices.Contains(args, w) {
					t.Errorf("args lack %q:\n%s", w, strings.Join(args, "\n"))
				}
			}
			for _, n := range tt.wantNot {
				for _, a := range args {
					if strings.HasPrefix(a, n) {
						t.Errorf("args hold %q, want no %s", a, n)
					}
				}
			}
			if c.Port != tt.wantPort || c.HealthURL != tt.wantURL {
				t.Errorf("port %d url %s, want %d %s", c.Port, c.HealthURL, tt.wantPort, tt.wantURL)
			}
			if c.Binary != "/bin/c/"+tt.component || c.Log != "/s/clusters/"+tt.plan.name+"/logs/"+tt.component+".log" {
				t.Errorf("binary %s log %s", c.Binary, c.Log)
			}
		})
	}
}
