package localenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// stateFile is the name of the file describing an environment in its state
// directory.
const stateFile = "state.json"

// Cluster roles.
const (
	RoleHost   = "host"
	RoleMember = "member"
)

// State describes a started environment: what runs, where, and how to reach
// it. It is written to <state dir>/state.json.
type State struct {
	// Dir is the state directory (not serialised; set on load).
	Dir string `json:"-"`
	// Members, MemberMode and NodesPerMember echo the options started with.
	Members        int        `json:"members"`
	MemberMode     MemberMode `json:"memberMode"`
	NodesPerMember int        `json:"nodesPerMember"`
	// StartedAt is when `up` started the environment.
	StartedAt time.Time `json:"startedAt"`
	// Clusters lists the host first, then the members in order.
	Clusters []ClusterState `json:"clusters"`
}

// ClusterState describes one cluster of the environment.
type ClusterState struct {
	// Name is "host" or "member-N".
	Name string `json:"name"`
	// Role is RoleHost or RoleMember.
	Role string `json:"role"`
	// Mode is the member mode (empty for the host).
	Mode MemberMode `json:"mode,omitempty"`
	// Server is the apiserver URL.
	Server string `json:"server"`
	// Kubeconfig is the path of an admin kubeconfig for the cluster.
	Kubeconfig string `json:"kubeconfig"`
	// ControllerKubeconfig is the path of the kubeconfig of the
	// controller-manager's identity (the ServiceAccount
	// flotilla-system/flotilla-controller-manager, bound to the generated
	// role); the host only.
	ControllerKubeconfig string `json:"controllerKubeconfig,omitempty"`
	// Labels describe the cluster (region and zone for members).
	Labels map[string]string `json:"labels,omitempty"`
	// Components are the processes serving the cluster, in start order.
	Components []ComponentState `json:"components"`
}

// ComponentState describes one process of the environment.
type ComponentState struct {
	// Name is the component name (see package components).
	Name string `json:"name"`
	// Binary is the absolute path of the executable.
	Binary string `json:"binary"`
	// PID is the process id, 0 before it starts.
	PID int `json:"pid"`
	// Port is the main listening port.
	Port int `json:"port"`
	// Ports lists every port the process listens on.
	Ports []int `json:"ports"`
	// HealthURL is probed to decide whether the component is healthy.
	HealthURL string `json:"healthURL"`
	// Log is the path of the process's log file.
	Log string `json:"log"`
	// Args are the process's arguments, so that `up` can restart it.
	Args []string `json:"args,omitempty"`
}

// Cluster returns the named cluster of the state.
func (s *State) Cluster(name string) (*ClusterState, bool) {
	for i := range s.Clusters {
		if s.Clusters[i].Name == name {
			return &s.Clusters[i], true
		}
	}
	return nil, false
}

// ClusterNames lists the clusters of the state, host first.
func (s *State) ClusterNames() []string {
	names := make([]string, 0, len(s.Clusters))
	for _, c := range s.Clusters {
		names = append(names, c.Name)
	}
	return names
}

// ErrNoEnvironment is returned when a state directory holds no environment.
var ErrNoEnvironment = errors.New("no environment")

// LoadState reads the state of the environment in dir.
func LoadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (start one with `flotilla up`)", ErrNoEnvironment, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read environment state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, stateFile), err)
	}
	s.Dir = dir
	return &s, nil
}

// save writes the state atomically.
func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write environment state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(s.Dir, stateFile))
}
