package localenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a component gets to exit after SIGTERM.
const stopGrace = 15 * time.Second

// Down stops every process of the environment in dir. With purge it also
// removes the environment's files (and the directory when nothing else is
// left in it). Stopping an environment that is not running is not an error.
func Down(ctx context.Context, dir string, purge bool, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	st, err := LoadState(dir)
	switch {
	case errors.Is(err, ErrNoEnvironment):
		fmt.Fprintf(out, "No environment in %s\n", dir)
		if purge {
			return purgeNothingElse(dir, out)
		}
		return nil
	case err != nil:
		return err
	}
	unlock, err := lockStateDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	stopped, err := stopAll(st)
	fmt.Fprintf(out, "Stopped %d process(es) of the environment in %s\n", stopped, dir)
	if err != nil {
		return err
	}
	if purge {
		// Removed under the lock, so that an `up` waiting for it does not
		// start in files about to go.
		if err := purgeState(dir); err != nil {
			return err
		}
		fmt.Fprintf(out, "Removed the environment's state from %s\n", dir)
	}
	return nil
}

// purgeNothingElse is `down --purge` of a directory without a state file:
// it removes the lock a failed `up` may have left, and the directory if it
// is then empty, but none of the names an environment uses (clusters, pki,
// kubeconfig): without a state file nothing says they are an
// environment's and not the user's own (a mistyped --state-dir, or an
// unset variable giving the current directory).
func purgeNothingElse(dir string, out io.Writer) error {
	var left []string
	for _, e := range stateEntries {
		if _, err := os.Lstat(filepath.Join(dir, e)); err == nil {
			left = append(left, e)
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(out, "Left %s in %s alone: without %s they may not be an environment's (remove them by hand if they are)\n", strings.Join(left, ", "), dir, stateFile)
		return nil
	}
	if err := os.Remove(filepath.Join(dir, ".lock")); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove lock: %w", err)
	}
	_ = os.Remove(dir) // only succeeds when empty
	return nil
}

// stopAll stops every live process of the state, all clusters at once and
// within a cluster in reverse start order, and reports how many were alive.
func stopAll(st *State) (int, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stopped int
		errs    []error
	)
	for _, c := range st.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := len(c.Components) - 1; i >= 0; i-- {
				comp := c.Components[i]
				if !alive(comp.PID, comp.Binary) {
					continue
				}
				err := stopPID(comp.PID, comp.Binary, stopGrace)
				mu.Lock()
				stopped++
				if err != nil {
					errs = append(errs, fmt.Errorf("%s %s: %w", c.Name, comp.Name, err))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return stopped, errors.Join(errs...)
}

// countAlive counts the live processes of a state and all it recorded.
func countAlive(st *State) (running, total int) {
	for _, c := range st.Clusters {
		for _, comp := range c.Components {
			total++
			if alive(comp.PID, comp.Binary) {
				running++
			}
		}
	}
	return running, total
}

// stateEntries are the files and directories an environment creates in its
// state directory (besides the .lock file); clearing removes only these,
// never anything else a user may keep there.
var stateEntries = []string{"clusters", "pki", "kubeconfig", stateFile, stateFile + ".tmp"}

// clearState removes an environment's files but keeps the directory and its
// lock, so that a new environment can start in it.
func clearState(dir string) error {
	for _, e := range stateEntries {
		if err := os.RemoveAll(filepath.Join(dir, e)); err != nil {
			return fmt.Errorf("remove %s: %w", filepath.Join(dir, e), err)
		}
	}
	return nil
}

// purgeState removes an environment's files, its lock, and the directory
// itself when nothing else is left in it. The caller holds the lock (or
// there is no environment to lock).
func purgeState(dir string) error {
	if err := clearState(dir); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, ".lock")); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove lock: %w", err)
	}
	_ = os.Remove(dir) // only succeeds when empty
	return nil
}

// lockStateDir keeps two flotilla commands from changing one environment at
// the same time.
func lockStateDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock state directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another flotilla command is using %s", dir)
	}
	return sync.OnceFunc(func() { f.Close() }), nil
}

// ComponentStatus is one row of Status.
type ComponentStatus struct {
	Cluster   string
	Component ComponentState
	// Running says whether the process is alive.
	Running bool
	// Health is nil when the health endpoint answered 200.
	Health error
}

// Status reports every component of the environment in dir.
func Status(ctx context.Context, dir string) (*State, []ComponentStatus, error) {
	st, err := LoadState(dir)
	if err != nil {
		return nil, nil, err
	}
	token := ""
	if host, ok := st.Cluster(HostName); ok {
		if cfg, err := RESTConfig(host.Kubeconfig); err == nil {
			token = cfg.BearerToken
		}
	}
	p := newProber(token)
	var rows []ComponentStatus
	for _, c := range st.Clusters {
		for _, comp := range c.Components {
			rows = append(rows, ComponentStatus{Cluster: c.Name, Component: comp})
		}
	}
	var wg sync.WaitGroup
	for i := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &rows[i]
			r.Running = alive(r.Component.PID, r.Component.Binary)
			if !r.Running {
				r.Health = errors.New("not running")
				return
			}
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			r.Health = p.probe(pctx, r.Component.HealthURL)
		}()
	}
	wg.Wait()
	return st, rows, nil
}
