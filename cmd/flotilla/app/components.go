package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/components"
)

// NewComponentsCmd returns `flotilla components`.
func NewComponentsCmd(streams Streams) *cobra.Command {
	var opts components.Options
	cmd := &cobra.Command{
		Use:   "components",
		Short: "Build (when the pins changed) and print the directory of the Kubernetes component binaries",
		Long: `Build kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok and
metrics-server from the sources pinned in hack/tools into the cache (about 7
minutes on 2 cores when cold), then print the directory holding them. Nothing is rebuilt while
the pins and the Go toolchain stay the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out = streams.ErrOut
			set, err := components.Ensure(cmd.Context(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintln(streams.Out, set.Dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.ToolsDir, "tools-dir", "", "the hack/tools module (default: found above the working directory; env "+components.EnvToolsDir+")")
	cmd.Flags().StringVar(&opts.CacheDir, "cache-dir", "", "build cache (default: <user cache dir>/flotilla/components; env "+components.EnvCacheDir+")")
	return cmd
}
