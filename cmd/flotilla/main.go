// Command flotilla is the single binary of the Flotilla multi-cluster
// federation control plane: the local environment (up, down, status,
// kubeconfig) today, the server processes and cluster operations as they land.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/flotilla-io/flotilla/cmd/flotilla/app"
)

func main() {
	// The first SIGINT, SIGTERM or SIGHUP (a closed terminal) cancels the
	// command, which then stops what it started; a second one ends the
	// process at once, as the signal's default does. A process started
	// with SIGHUP ignored (nohup) keeps ignoring it.
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		signals = append(signals, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	cmd := app.NewRootCmd(app.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.ExecuteContext(ctx); err != nil {
		// One line per error, so that scripts and people see the cause at once.
		fmt.Fprintln(os.Stderr, "error: "+strings.ReplaceAll(err.Error(), "\n", "; "))
		os.Exit(1)
	}
}
