package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// profiler saves Go profiles of the controller-manager into --profile-dir
// (a no-op when it is empty): a CPU profile over the first seconds of a
// burst and a heap profile once it settled.
type profiler struct {
	dir     string
	seconds int
	b       *bench
}

// cpu starts a CPU profile of --profile-seconds named name (.pprof added)
// and returns a function that waits for it to be written.
func (p profiler) cpu(ctx context.Context, name string) (wait func()) {
	if p.dir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.save(ctx, name, fmt.Sprintf("profile?seconds=%d", p.seconds), time.Duration(p.seconds+30)*time.Second)
	}()
	return func() { <-done }
}

// heap saves a heap profile named name (.pprof added).
func (p profiler) heap(ctx context.Context, name string) {
	if p.dir != "" {
		p.save(ctx, name, "heap?gc=1", time.Minute)
	}
}

// goroutines saves the controller-manager's goroutine stacks as text
// (name.txt), to show where a stuck phase's work waits.
func (p profiler) goroutines(ctx context.Context, name string) {
	if p.dir != "" {
		p.save(ctx, name, "goroutine?debug=2", time.Minute)
	}
}

// save fetches /debug/pprof/<query> into dir/name.pprof (name.txt for a
// text dump). A failure is
// logged and otherwise ignored: profiles explain numbers, they are not
// numbers.
func (p profiler) save(ctx context.Context, name, query string, timeout time.Duration) {
	if err := p.fetch(ctx, name, query, timeout); err != nil {
		logf("  profile %s: %v", name, err)
		return
	}
	logf("  profile written to %s", filepath.Join(p.dir, name+extension(query)))
}

func (p profiler) fetch(ctx context.Context, name, query string, timeout time.Duration) error {
	cm, err := p.b.controllerManager()
	if err != nil {
		return err
	}
	if len(cm.Ports) < 3 {
		return fmt.Errorf("%s records no profiling port (started by an older flotilla?)", cm.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s", cm.Ports[2], query), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(p.dir, name+extension(query)))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// extension is the file extension of a /debug/pprof query's answer.
func extension(query string) string {
	if strings.Contains(query, "debug=") {
		return ".txt"
	}
	return ".pprof"
}
