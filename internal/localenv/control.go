package localenv

import (
	"context"
	"fmt"
	"syscall"
)

// component finds a recorded component of a cluster.
func (e *Environment) component(cluster, name string) (*ComponentState, error) {
	cl, ok := e.State.Cluster(cluster)
	if !ok {
		return nil, fmt.Errorf("no cluster %q in the environment", cluster)
	}
	for i := range cl.Components {
		if cl.Components[i].Name == name {
			return &cl.Components[i], nil
		}
	}
	return nil, fmt.Errorf("cluster %s has no component %q", cluster, name)
}

// Signal sends sig to a component, for failure injection: SIGKILL to crash
// it, SIGSTOP to freeze it with its connections open, SIGCONT to resume it.
func (e *Environment) Signal(cluster, name string, sig syscall.Signal) error {
	c, err := e.component(cluster, name)
	if err != nil {
		return err
	}
	if !alive(c.PID, c.Binary) {
		return fmt.Errorf("%s %s (pid %d) is not running", cluster, name, c.PID)
	}
	if err := syscall.Kill(c.PID, sig); err != nil {
		return fmt.Errorf("signal %s %s: %w", cluster, name, err)
	}
	return nil
}

// Restart starts a component that is not running again with its recorded
// arguments and data, and waits until it is healthy.
func (e *Environment) Restart(ctx context.Context, cluster, name string, detach bool) error {
	c, err := e.component(cluster, name)
	if err != nil {
		return err
	}
	if alive(c.PID, c.Binary) {
		return fmt.Errorf("%s %s (pid %d) is still running", cluster, name, c.PID)
	}
	pr, err := restart(ctx, e.State, cluster, c, detach)
	if pr != nil {
		e.procs = append(e.procs, pr)
	}
	return err
}

// restart starts a recorded component with its recorded arguments, records
// its new pid and waits until it is healthy.
func restart(ctx context.Context, st *State, cluster string, c *ComponentState, detach bool) (*process, error) {
	if len(c.Args) == 0 {
		return nil, fmt.Errorf("cannot restart %s %s: the state records no arguments for it", cluster, c.Name)
	}
	hostCfg, err := RESTConfig(st.Clusters[0].Kubeconfig)
	if err != nil {
		return nil, err
	}
	pr, err := startProcess(*c, c.Args, detach)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cluster, err)
	}
	c.PID = pr.state.PID
	if err := st.save(); err != nil {
		return pr, err
	}
	return pr, waitFor(ctx, cluster+" "+c.Name, readyTimeout, pr.exited, func(ctx context.Context) error {
		return newProber(hostCfg.BearerToken).probe(ctx, c.HealthURL)
	})
}
