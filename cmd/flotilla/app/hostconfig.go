package app

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

// hostFlags locate the host control plane's kubeconfig.
type hostFlags struct {
	kubeconfig, context string
}

func (h *hostFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&h.kubeconfig, "host-kubeconfig", "", "kubeconfig of the host control plane (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&h.context, "host-context", "", "context in the host kubeconfig")
}

func (h *hostFlags) config() (*rest.Config, error) {
	cfg, err := loadConfig(h.kubeconfig, h.context)
	if err != nil {
		return nil, fmt.Errorf("host kubeconfig: %w", err)
	}
	return cfg, nil
}

// client returns a controller-runtime client for the host that knows the
// built-in kinds and flotilla.io/v1alpha1.
func (h *hostFlags) client() (client.Client, error) {
	cfg, err := h.config()
	if err != nil {
		return nil, err
	}
	scheme, err := hostscheme.New()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("client for the host: %w", err)
	}
	return c, nil
}

// loadConfig loads a kubeconfig with the usual precedence: the explicit
// path, then $KUBECONFIG, then ~/.kube/config.
func loadConfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
}
