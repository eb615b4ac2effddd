package manager

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/internal/controller/cluster"
)

// Controller is a controller the manager can run.
type Controller struct {
	// Name is the name --controllers uses.
	Name string
	// Setup registers the controller with the manager.
	Setup func(mgr ctrl.Manager, opts Options) error
}

// Controllers are all controllers, in registration order.
var Controllers = []Controller{
	{Name: cluster.Name, Setup: func(mgr ctrl.Manager, opts Options) error {
		r := &cluster.Reconciler{
			Client:                  mgr.GetClient(),
			Recorder:                mgr.GetEventRecorder("flotilla-" + cluster.Name),
			CredentialsNamespace:    opts.CredentialsNamespace,
			Session:                 opts.Cluster,
			MaxConcurrentReconciles: opts.ConcurrentClusterSyncs,
		}
		return r.SetupWithManager(mgr)
	}},
}

// ControllerNames returns the names of all controllers, sorted.
func ControllerNames() []string {
	names := make([]string, 0, len(Controllers))
	for _, c := range Controllers {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// Enabled resolves a --controllers list against the known controller
// names: "*" enables all, "name" enables one, "-name" disables one
// (after "*"). Unknown names are an error.
func Enabled(list []string, known []string) (map[string]bool, error) {
	enabled := map[string]bool{}
	for _, item := range list {
		item = strings.TrimSpace(item)
		name := strings.TrimPrefix(item, "-")
		switch {
		case item == "*":
			for _, k := range known {
				if _, set := enabled[k]; !set {
					enabled[k] = true
				}
			}
		case item == "" || name == "":
			return nil, fmt.Errorf("--controllers: empty controller name")
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("--controllers: unknown controller %q (known: %s)", name, strings.Join(known, ", "))
		default:
			enabled[name] = !strings.HasPrefix(item, "-")
		}
	}
	for k, on := range enabled {
		if !on {
			delete(enabled, k)
		}
	}
	return enabled, nil
}
