package localenv

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla-io/flotilla/config/rbac"
)

// adminUser is the name of the admin identity in every kubeconfig.
const adminUser = "admin"

// kubeconfigFor builds an admin kubeconfig for one cluster; the context is
// named after the cluster.
func kubeconfigFor(name, server string, caPEM []byte, token string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	addCluster(cfg, name, server, caPEM, token)
	cfg.CurrentContext = name
	return cfg
}

func addCluster(cfg *clientcmdapi.Config, name, server string, caPEM []byte, token string) {
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[adminUser+"@"+name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: adminUser + "@" + name}
}

// controllerKubeconfigFor builds the kubeconfig of the controller-manager's
// identity in the host.
func controllerKubeconfigFor(name, server string, caPEM []byte, token string) *clientcmdapi.Config {
	return identityKubeconfigFor(name, server, caPEM, rbac.ServiceAccount, token)
}

// identityKubeconfigFor builds the kubeconfig of one of Flotilla's own
// identities (user) in a cluster.
func identityKubeconfigFor(name, server string, caPEM []byte, user, token string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user+"@"+name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user + "@" + name}
	cfg.CurrentContext = name
	return cfg
}

func writeKubeconfig(cfg *clientcmdapi.Config, path string) error {
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// RESTConfig loads a client configuration from a kubeconfig written by the
// environment, with client-side throttling raised for tests and tools.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return cfg, nil
}
