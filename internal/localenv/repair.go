package localenv

import (
	"context"
	"fmt"
)

// repair restarts, cluster by cluster in start order, every recorded
// component that is not running, with the arguments it was started with,
// and waits until each is healthy. Data directories are kept, so the
// clusters come back with their objects.
func repair(ctx context.Context, st *State, opts Options) error {
	hostCfg, err := RESTConfig(st.Clusters[0].Kubeconfig)
	if err != nil {
		return err
	}
	prober := newProber(hostCfg.BearerToken)
	for ci := range st.Clusters {
		cl := &st.Clusters[ci]
		for i := range cl.Components {
			c := &cl.Components[i]
			if alive(c.PID, c.Binary) {
				continue
			}
			if len(c.Args) == 0 {
				return fmt.Errorf("cannot restart %s %s: the state records no arguments for it", cl.Name, c.Name)
			}
			pr, err := startProcess(*c, c.Args, opts.Detach)
			if err != nil {
				return fmt.Errorf("%s: %w", cl.Name, err)
			}
			c.PID = pr.state.PID
			if err := st.save(); err != nil {
				return err
			}
			if err := waitFor(ctx, cl.Name+" "+c.Name, readyTimeout, pr.exited, func(ctx context.Context) error {
				return prober.probe(ctx, c.HealthURL)
			}); err != nil {
				return err
			}
			fmt.Fprintf(opts.Out, "  restarted %s %s (pid %d)\n", cl.Name, c.Name, c.PID)
		}
	}
	return nil
}
