package localenv

import (
	"encoding/csv"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-io/flotilla/config/rbac"
)

// The host's token file knows the admin (system:masters), the
// controller-manager and the gateway, each as its ServiceAccount, in no
// privileged group; their kubeconfigs carry their own tokens, not the
// admin's. Members know only the admin. (Before, the controller-manager ran
// with the admin kubeconfig.)
func TestPrepareGivesTheControllerManagerItsOwnIdentity(t *testing.T) {
	ca, err := newAuthority("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests := []struct {
		name      string
		plan      *clusterPlan
		wantUsers map[string]string // user → groups
	}{
		{"host", &clusterPlan{paths: paths{dir, HostName}, role: RoleHost}, map[string]string{
			adminUser: "system:masters", rbac.Username: "system:serviceaccounts,system:serviceaccounts:flotilla-system",
			gatewayUsername: "system:serviceaccounts,system:serviceaccounts:flotilla-system",
		}},
		{"member", &clusterPlan{paths: paths{dir, "member-1"}, role: RoleMember, mode: ModeFull, index: 1}, map[string]string{
			adminUser: "system:masters",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.plan.assignPorts([]int{1, 2, 3, 4, 5, 6, 7})
			cs, err := tt.plan.prepare(ca, "admin-token", "controller-token", "gateway-token")
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(tt.plan.pki("tokens.csv"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			tokens := map[string]string{}
			for _, r := range rows {
				got[r[1]] = r[3]
				tokens[r[1]] = r[0]
			}
			if len(got) != len(tt.wantUsers) {
				t.Errorf("users %v, want %v", got, tt.wantUsers)
			}
			for u, g := range tt.wantUsers {
				if got[u] != g {
					t.Errorf("user %s groups %q, want %q", u, got[u], g)
				}
			}
			if tt.plan.role != RoleHost {
				if cs.ControllerKubeconfig != "" {
					t.Errorf("member has a controller-manager kubeconfig %s", cs.ControllerKubeconfig)
				}
				return
			}
			cfg, err := RESTConfig(cs.ControllerKubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.BearerToken != tokens[rbac.Username] || strings.Contains(cfg.BearerToken, "admin") {
				t.Errorf("controller-manager kubeconfig token %q, want its own %q", cfg.BearerToken, tokens[rbac.Username])
			}
			c := tt.plan.controllerManager("/bin/flotilla", []int{7, 8, 9})
			if !slices.Contains(c.Args, "--kubeconfig="+cs.ControllerKubeconfig) {
				t.Errorf("controller-manager args %v, want --kubeconfig=%s", c.Args, cs.ControllerKubeconfig)
			}
			g := tt.plan.gateway("/bin/flotilla", 10)
			gw, err := RESTConfig(tt.plan.gatewayKubeconfig())
			if err != nil {
				t.Fatal(err)
			}
			if gw.BearerToken != tokens[gatewayUsername] || gw.BearerToken == tokens[adminUser] || !slices.Contains(g.Args, "--host-kubeconfig="+tt.plan.gatewayKubeconfig()) {
				t.Errorf("gateway kubeconfig token %q (want its own %q), args %v", gw.BearerToken, tokens[gatewayUsername], g.Args)
			}
		})
	}
}
