package controlplane_test

import (
	"context"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// apiKindCase creates a valid object of a kind, then an invalid one that
// must be refused naming field.
type apiKindCase struct {
	kind         string
	good, bad    func(ctx context.Context, c kubernetes.Interface) error
	invalidField string
}

func meta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// TestAPIObjectKinds: the kinds skiff serves for other components to act
// on are created, listed and checked as kube-apiserver checks them.
func TestAPIObjectKinds(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	opts := metav1.CreateOptions{}
	pathType := networkingv1.PathTypePrefix
	cases := []apiKindCase{
		{"RuntimeClass", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: meta("fast"), Handler: "runc"}, opts)
			return err
		}, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: meta("bad"), Handler: "Not_A_Label"}, opts)
			return err
		}, "handler"},
		{"PodTemplate", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().PodTemplates("default").Create(ctx, &corev1.PodTemplate{ObjectMeta: meta("t"),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}, opts)
			return err
		}, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().PodTemplates("default").Create(ctx, &corev1.PodTemplate{ObjectMeta: meta("bad"),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}}, opts)
			return err
		}, "template.spec.containers[0].image"},
		{"StorageClass", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: meta("local"), Provisioner: "example.com/local"}, opts)
			return err
		}, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: meta("bad")}, opts)
			return err
		}, "provisioner"},
		{"CSINode", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: meta("n1"),
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "example.com/d", NodeID: "n1"}}}}, opts)
			return err
		}, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: meta("bad"),
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "example.com/d"}}}}, opts)
			return err
		}, "spec.drivers[0].nodeID"},
		{"Ingress", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.NetworkingV1().Ingresses("default").Create(ctx, &networkingv1.Ingress{ObjectMeta: meta("web"),
				Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "web.example.com",
					IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
						Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}, opts)
			return err
		}, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.NetworkingV1().Ingresses("default").Create(ctx, &networkingv1.Ingress{ObjectMeta: meta("bad")}, opts)
			return err
		}, "spec"},
		{"FlowSchema", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: meta("fs"),
				Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "pl"}}}, opts)
			return err
		}, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: meta("bad"),
				Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 20000, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "pl"}}}, opts)
			return err
		}, "spec.matchingPrecedence"},
		{"ResourceClaim", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.ResourceV1().ResourceClaims("default").Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: meta("gpu"),
				Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
					Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}, opts)
			return err
		}, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.ResourceV1().ResourceClaims("default").Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: meta("bad"),
				Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu"}}}}}, opts)
			return err
		}, "spec.devices.requests[0]"},
	}
	for _, tc := range cases {
		if err := tc.good(ctx, c); err != nil {
			t.Errorf("%s: create: %v", tc.kind, err)
		}
		err := tc.bad(ctx, c)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.invalidField) {
			t.Errorf("%s: invalid object: %v, want Invalid naming %s", tc.kind, err, tc.invalidField)
		}
	}
	sc, err := c.StorageV1().StorageClasses().Get(ctx, "local", metav1.GetOptions{})
	if err != nil || sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("storage class defaults: %+v %v", sc, err)
	}
	sc.Provisioner = "example.com/other"
	if _, err := c.StorageV1().StorageClasses().Update(ctx, sc, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing a storage class's provisioner: %v, want Invalid", err)
	}
	claim, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "gpu", metav1.GetOptions{})
	if err != nil || claim.Spec.Devices.Requests[0].Exactly.Count != 1 {
		t.Errorf("claim defaults: %+v %v", claim, err)
	}
}

// TestEventsThroughBothAPIs: an Event written through core/v1 reads
// through events.k8s.io/v1 and back, as one object.
func TestEventsThroughBothAPIs(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	now := metav1.NewMicroTime(time.Now())
	_, err := c.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "core", Labels: map[string]string{"t": "1"}},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}, Reason: "Started", Message: "hello", Type: "Normal"}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.EventsV1().Events("default").Get(ctx, "core", metav1.GetOptions{})
	if err != nil || ev.Note != "hello" || ev.Regarding.Name != "p" || ev.Reason != "Started" {
		t.Fatalf("core event through events.k8s.io: %+v %v", ev, err)
	}
	_, err = c.EventsV1().Events("default").Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: map[string]string{"t": "1"}},
		EventTime: now, ReportingController: "example.com/c", ReportingInstance: "c-1", Action: "Test", Reason: "Tested",
		Regarding: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}, Note: "from v1", Type: "Normal"}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	core, err := c.CoreV1().Events("default").Get(ctx, "new", metav1.GetOptions{})
	if err != nil || core.Message != "from v1" || core.InvolvedObject.Name != "p" || core.ReportingController != "example.com/c" {
		t.Fatalf("events.k8s.io event through core: %+v %v", core, err)
	}
	list, err := c.EventsV1().Events("default").List(ctx, metav1.ListOptions{LabelSelector: "t=1"})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list through events.k8s.io: %v %v", list, err)
	}
	// Field selectors by each API's names; the core API's source is the
	// newer API's reporter when the event has no source.
	byReporter, err := c.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reportingController=example.com/c"})
	if err != nil || len(byReporter.Items) != 1 || byReporter.Items[0].Name != "new" {
		t.Errorf("events.k8s.io by reportingController: %v %v", byReporter, err)
	}
	bySource, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "source=example.com/c"})
	if err != nil || len(bySource.Items) != 1 || bySource.Items[0].Name != "new" {
		t.Errorf("core events by source: %v %v", bySource, err)
	}
	_, err = c.EventsV1().Events("default").Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "reportingController") {
		t.Errorf("an events.k8s.io event without a reporter: %v, want Invalid", err)
	}
	if err := c.EventsV1().Events("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "t=1"}); err != nil {
		t.Fatal(err)
	}
	if list, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{LabelSelector: "t=1"}); err != nil || len(list.Items) != 0 {
		t.Errorf("after delete collection: %v %v", list, err)
	}
}

// TestClusterTrustBundleNames: a bundle of a signer is named after it.
func TestClusterTrustBundleNames(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: serverCA(t, s).Raw}))
	for _, tt := range []struct {
		name, signer string
		ok           bool
	}{
		{"example.com:signer:bundle-1", "example.com/signer", true},
		{"plain-bundle", "", true},
		{"other.com:signer:bundle-1", "example.com/signer", false},
		{"with:colon", "", false},
	} {
		_, err := c.CertificatesV1().ClusterTrustBundles().Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: tt.name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: tt.signer, TrustBundle: ca}}, metav1.CreateOptions{})
		if (err == nil) != tt.ok {
			t.Errorf("%s (signer %q): %v, want ok %v", tt.name, tt.signer, err, tt.ok)
		}
	}
}

// TestServiceCIDRsAndIPAddresses: the server publishes its service range
// as the default ServiceCIDR, Ready; IPAddresses are named by canonical
// addresses and name what holds them.
func TestServiceCIDRsAndIPAddresses(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	def, err := c.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("default ServiceCIDR: %v", err)
	}
	if len(def.Spec.CIDRs) != 1 || !apimeta.IsStatusConditionTrue(def.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
		t.Errorf("default ServiceCIDR = %+v, want one CIDR, Ready", def)
	}
	def.Spec.CIDRs[0] = "10.200.0.0/16"
	if _, err := c.NetworkingV1().ServiceCIDRs().Update(ctx, def, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.cidrs[0]") {
		t.Errorf("changing a ServiceCIDR's range: %v, want Invalid naming spec.cidrs[0]", err)
	}
	twoV4 := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "two"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.1.0.0/24", "10.2.0.0/24"}}}
	if _, err := c.NetworkingV1().ServiceCIDRs().Create(ctx, twoV4, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("two IPv4 ranges: %v, want Invalid", err)
	}
	ref := &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}
	for _, tt := range []struct {
		name string
		ref  *networkingv1.ParentReference
		ok   bool
	}{
		{"10.96.3.4", ref, true},
		{"fe80::42:1dff:fe84:f9e2", ref, true},
		{"fe80:0::1", ref, false}, // not canonical
		{"web", ref, false},
		{"10.96.3.5", nil, false},
		{"10.96.3.6", &networkingv1.ParentReference{Name: "web"}, false},
	} {
		_, err := c.NetworkingV1().IPAddresses().Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: tt.name},
			Spec: networkingv1.IPAddressSpec{ParentRef: tt.ref}}, metav1.CreateOptions{})
		if (err == nil) != tt.ok {
			t.Errorf("IPAddress %s (parent %+v): %v, want ok %v", tt.name, tt.ref, err, tt.ok)
		}
	}
	ip, err := c.NetworkingV1().IPAddresses().Get(ctx, "10.96.3.4", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip.Spec.ParentRef.Name = "other"
	if _, err := c.NetworkingV1().IPAddresses().Update(ctx, ip, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing an IPAddress's parent: %v, want Invalid", err)
	}
}
