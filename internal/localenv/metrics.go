package localenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Each full member runs metrics-server, so that it serves metrics.k8s.io
// (kubectl top, HorizontalPodAutoscalers) as a real cluster does: its
// apiserver aggregates the API from metrics-server (front-proxy client
// certificate, requestheader flags), metrics-server scrapes each kwok
// node's simulated kubelet resource metrics (the node annotation
// metrics.k8s.io/resource-metrics-path names kwok's per-node path), and
// kwok reports a pod's usage from its annotations
// kwok.x-k8s.io/usage-cpu and kwok.x-k8s.io/usage-memory
// (AnnotationUsageCPU). The apiserver reaches metrics-server through a
// Service of type ExternalName (localhost): there is no service network.

// Pod annotations kwok reads a fake pod's resource usage from.
const (
	AnnotationUsageCPU    = "kwok.x-k8s.io/usage-cpu"
	AnnotationUsageMemory = "kwok.x-k8s.io/usage-memory"
)

// metricsServiceName is the Service (in kube-system) and the name its
// serving certificate is for.
const (
	metricsServiceName = "metrics-server"
	metricsServiceHost = metricsServiceName + ".kube-system.svc"
	frontProxyClient   = "front-proxy-client"
)

// AnnotationResourceMetricsPath, on a node, is the path metrics-server
// scrapes for the node's resource metrics instead of /metrics/resource.
const AnnotationResourceMetricsPath = "metrics.k8s.io/resource-metrics-path"

func (p paths) frontProxyCA() string { return p.pki("front-proxy-ca.crt") }

func (p clusterPlan) runsMetrics() bool { return p.runsKwok() }

// prepareMetrics writes a full member's front-proxy CA (its own: a
// front-proxy certificate asserts any user to the apiserver that trusts
// it, so no two members share one) and client certificate (its
// apiserver's identity towards metrics-server; the CA's key is not kept),
// and metrics-server's serving certificate.
func (p clusterPlan) prepareMetrics(ca *authority) error {
	if !p.runsMetrics() {
		return nil
	}
	frontProxy, err := newAuthority("flotilla-front-proxy-" + p.name)
	if err != nil {
		return err
	}
	clientCert, clientKey, err := frontProxy.issueClient(frontProxyClient)
	if err != nil {
		return err
	}
	servingCert, servingKey, err := ca.issueServing(metricsServiceHost)
	if err != nil {
		return err
	}
	return writeFiles(map[string][]byte{
		p.frontProxyCA():                frontProxy.certPEM,
		p.pki("front-proxy-client.crt"): clientCert,
		p.pki("front-proxy-client.key"): clientKey,
		p.pki("metrics-server.crt"):     servingCert,
		p.pki("metrics-server.key"):     servingKey,
	})
}

// aggregationArgs are the apiserver flags of a member that aggregates
// metrics.k8s.io.
func (p clusterPlan) aggregationArgs() []string {
	return []string{
		"--requestheader-client-ca-file=" + p.frontProxyCA(),
		"--requestheader-allowed-names=" + frontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.pki("front-proxy-client.crt"),
		"--proxy-client-key-file=" + p.pki("front-proxy-client.key"),
	}
}

// metricsServerArgs are metrics-server's flags: the member's admin
// kubeconfig (it reads nodes and pods and delegates authentication and
// authorization to the apiserver), loopback serving, kwok's nodes
// scraped every 10 s at their status port without verifying kwok's
// certificate.
func (p clusterPlan) metricsServerArgs() []string {
	return []string{
		"--kubeconfig=" + p.kubeconfig(),
		"--authentication-kubeconfig=" + p.kubeconfig(),
		"--authorization-kubeconfig=" + p.kubeconfig(),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.ports.metrics),
		"--tls-cert-file=" + p.pki("metrics-server.crt"),
		"--tls-private-key-file=" + p.pki("metrics-server.key"),
		"--cert-dir=" + p.certDir("metrics-server"),
		"--kubelet-insecure-tls",
		"--kubelet-use-node-status-port",
		"--kubelet-preferred-address-types=InternalIP",
		"--metric-resolution=10s",
		"--kubelet-request-timeout=5s",
	}
}

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// registerMetrics makes a full member's apiserver serve metrics.k8s.io
// from its metrics-server: a Service of type ExternalName (localhost) and
// the APIService v1beta1.metrics.k8s.io, trusting the environment's CA.
// It keeps what exists.
func registerMetrics(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, port int, caPEM []byte) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: metricsServiceName},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(port), TargetPort: intstr.FromInt32(int32(port))}},
		},
	}
	if _, err := cs.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service kube-system/%s: %w", metricsServiceName, err)
	}
	api := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1",
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"caBundle": base64.StdEncoding.EncodeToString(caPEM),
			"service":  map[string]any{"namespace": "kube-system", "name": metricsServiceName, "port": int64(port)},
		},
	}}
	if _, err := dyn.Resource(apiServiceGVR).Create(ctx, api, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create APIService v1beta1.metrics.k8s.io: %w", err)
	}
	return nil
}

// issueClient signs a client certificate for commonName.
func (a *authority) issueClient(commonName string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate client key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign client certificate for %s: %w", commonName, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(der), keyPEM, nil
}
