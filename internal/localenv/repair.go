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
	for ci := range st.Clusters {
		cl := &st.Clusters[ci]
		for i := range cl.Components {
			c := &cl.Components[i]
			if alive(c.PID, c.Binary) {
				continue
			}
			if _, err := restart(ctx, st, cl.Name, c, opts.Detach); err != nil {
				return err
			}
			fmt.Fprintf(opts.Out, "  restarted %s %s (pid %d)\n", cl.Name, c.Name, c.PID)
		}
	}
	return nil
}
