package manager

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/interpreters"
	"github.com/flotilla-io/flotilla/internal/poll"
)

// Create cannot be limited to a name; get and update are, to Flotilla's
// own webhook configuration (updating another's would send its objects
// here).
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;update,resourceNames=flotilla-workloadinterpreters

// InterpreterWebhookName is the ValidatingWebhookConfiguration that sends
// WorkloadInterpreters to the controller-manager for validation.
const InterpreterWebhookName = "flotilla-workloadinterpreters"

// webhookServer is the webhook server of opts; nil without a port (the
// manager then serves none).
func webhookServer(opts Options) webhook.Server {
	if opts.WebhookPort == 0 {
		return nil
	}
	return webhook.NewServer(webhook.Options{Host: opts.WebhookHost, Port: opts.WebhookPort, CertDir: opts.WebhookCertDir})
}

// addInterpreterWebhook serves the WorkloadInterpreter validation and, with
// a URL and CA, has the leader install its configuration.
func addInterpreterWebhook(mgr ctrl.Manager, opts Options) error {
	if opts.WebhookPort == 0 {
		return nil
	}
	v := &interpreters.Validator{Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper()}
	mgr.GetWebhookServer().Register(interpreters.WebhookPath, v.Webhook(mgr.GetScheme()))
	if opts.WebhookURL == "" {
		return nil
	}
	ca, err := os.ReadFile(opts.WebhookCAFile)
	if err != nil {
		return fmt.Errorf("--webhook-ca-file: %w", err)
	}
	cfg := interpreterWebhookConfiguration(strings.TrimSuffix(opts.WebhookURL, "/")+interpreters.WebhookPath, ca)
	return mgr.Add(webhookInstaller{cfg: mgr.GetConfig(), want: cfg, logger: mgr.GetLogger().WithName("webhook")})
}

// interpreterWebhookConfiguration sends creates and updates of
// WorkloadInterpreters to url. A controller-manager that does not answer
// fails them (an interpreter is never stored unchecked by admission), and
// nothing else goes through the webhook.
func interpreterWebhookConfiguration(url string, ca []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: InterpreterWebhookName, Labels: map[string]string{v1alpha1.LabelManaged: "true"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "workloadinterpreters.flotilla.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{v1alpha1.GroupVersion.Group}, APIVersions: []string{v1alpha1.GroupVersion.Version},
					Resources: []string{"workloadinterpreters"}, Scope: ptr.To(admissionregistrationv1.ClusterScope),
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			// The apiserver's defaults, so that an installed configuration
			// compares equal and a restart writes nothing.
			NamespaceSelector: &metav1.LabelSelector{},
			ObjectSelector:    &metav1.LabelSelector{},
		}},
	}
}

// webhookInstaller writes the webhook configuration once this replica
// leads, only when it is missing or differs.
type webhookInstaller struct {
	cfg    *rest.Config
	want   *admissionregistrationv1.ValidatingWebhookConfiguration
	logger logr.Logger
}

// NeedLeaderElection makes only the leader install it.
func (webhookInstaller) NeedLeaderElection() bool { return true }

// Start installs the configuration, retrying for upgradeTimeout.
func (w webhookInstaller) Start(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(w.cfg)
	if err != nil {
		return err
	}
	api := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	err = poll.Until(ctx, upgradeTimeout, func(ctx context.Context) error {
		cur, err := api.Get(ctx, w.want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, w.want, metav1.CreateOptions{FieldManager: "flotilla"})
			if err == nil {
				w.logger.Info("Installed the WorkloadInterpreter webhook", "name", w.want.Name)
			}
		case err == nil && !equality.Semantic.DeepEqual(cur.Webhooks, w.want.Webhooks):
			next := cur.DeepCopy()
			next.Webhooks = w.want.Webhooks
			_, err = api.Update(ctx, next, metav1.UpdateOptions{FieldManager: "flotilla"})
			if err == nil {
				w.logger.Info("Updated the WorkloadInterpreter webhook", "name", w.want.Name)
			}
		}
		if err != nil {
			w.logger.Error(err, "Installing the WorkloadInterpreter webhook; retrying")
		}
		return err
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("install the WorkloadInterpreter webhook: %w", err)
	}
	return nil
}
