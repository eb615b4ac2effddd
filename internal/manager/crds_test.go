package manager

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

func TestCRDUpgradeNeedsLeadership(t *testing.T) {
	if !(crdUpgrader{}).NeedLeaderElection() {
		t.Fatal("the CRD upgrade would run on standbys")
	}
}

// A standby creates the CRDs the host lacks but leaves an existing CRD of
// another shape alone (an older standby must not downgrade a newer
// leader's CRDs); once it leads, it upgrades that CRD, and a later pass
// writes nothing.
func TestStandbyLeavesCRDsAloneUntilItLeads(t *testing.T) {
	testenv.Need(t, env)
	ctx := context.Background()
	cfg := env.Host.Config
	if err := crd.Install(ctx, cfg); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
	api := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()

	// The MemberCluster CRD in another version's shape (one printer column
	// less, another description), as another replica installed it.
	const edited, missing = "memberclusters.flotilla.io", "schedulerpluginwebhooks.flotilla.io"
	other, err := api.Get(ctx, edited, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := &other.Spec.Versions[0]
	v.AdditionalPrinterColumns = v.AdditionalPrinterColumns[:len(v.AdditionalPrinterColumns)-1]
	v.Schema.OpenAPIV3Schema.Description = "MemberCluster as another version defines it"
	if other, err = api.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A CRD the other version does not have.
	if err := api.Delete(ctx, missing, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "CRD "+missing+" deleted", func(ctx context.Context) error {
		if _, err := api.Get(ctx, missing, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})

	// Another replica holds the lease.
	opts := DefaultOptions()
	opts.Controllers = nil
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.LeaderElectionID = "crd-test"
	opts.RetryPeriod = 500 * time.Millisecond
	leases := env.Host.Client.CoordinationV1().Leases(opts.LeaderElectionNamespace)
	now := metav1.NewMicroTime(time.Now())
	if err := PrepareHost(ctx, cfg, Options{CredentialsNamespace: opts.CredentialsNamespace, LeaderElectionNamespace: opts.LeaderElectionNamespace}); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: opts.LeaderElectionID, Namespace: opts.LeaderElectionNamespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other-replica"), LeaseDurationSeconds: ptr.To[int32](3600), AcquireTime: &now, RenewTime: &now},
	}
	if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := leases.Delete(context.Background(), lease.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete lease: %v", err)
		}
	})

	mgr := startManager(t, opts)
	select {
	case <-mgr.Elected():
		t.Fatal("elected although another replica holds the lease")
	default:
	}
	got, err := api.Get(ctx, edited, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != other.ResourceVersion {
		t.Errorf("the standby changed CRD %s (resourceVersion %s, was %s)", edited, got.ResourceVersion, other.ResourceVersion)
	}
	if _, err := api.Get(ctx, missing, metav1.GetOptions{}); err != nil {
		t.Errorf("the standby did not create the missing CRD %s: %v", missing, err)
	}

	// The other replica goes away: this one leads and upgrades the CRD.
	if err := leases.Delete(ctx, lease.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mgr.Elected():
	case <-time.After(time.Minute):
		t.Fatal("not elected after the lease was released")
	}
	want := embedded(t, edited)
	testenv.Eventually(t, time.Minute, "the leader upgrades CRD "+edited, func(ctx context.Context) error {
		live, err := api.Get(ctx, edited, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !crd.UpToDate(want, live) {
			return fmt.Errorf("still has %d printer columns and description %q", len(live.Spec.Versions[0].AdditionalPrinterColumns), live.Spec.Versions[0].Schema.OpenAPIV3Schema.Description)
		}
		return nil
	})

	// Everything up to date: another pass (a restart) writes nothing.
	res, err := crd.Ensure(ctx, cfg, crd.Upgrade)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created)+len(res.Updated) > 0 {
		t.Errorf("a pass over up-to-date CRDs wrote: %+v", res)
	}
}

// embedded returns this binary's CRD of name.
func embedded(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := crd.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no embedded CRD %s", name)
	return nil
}
