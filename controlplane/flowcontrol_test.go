package controlplane_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestPriorityAndFairness: the server starts with kube-apiserver's
// FlowSchemas and priority levels; every request is classified (the
// response names the FlowSchema and priority level by UID, as
// kube-apiserver's do), a new FlowSchema takes the requests it matches,
// its status says whether its priority level exists, and a watch holds
// its level's seat only until it is established.
func TestPriorityAndFairness(t *testing.T) {
	s, c := startServer(t)
	ctx := context.Background()
	fc := c.FlowcontrolV1()
	exempt, err := fc.FlowSchemas().Get(ctx, "exempt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if exempt.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("exempt FlowSchema annotations %v, want %s=true", exempt.Annotations, flowcontrolv1.AutoUpdateAnnotationKey)
	}
	for _, name := range []string{"catch-all", "global-default", "workload-low", "system", "leader-election"} {
		if _, err := fc.PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("priority level %s: %v", name, err)
		}
	}
	admin := s.RESTConfig()
	if got, status := classified(t, admin, "/api/v1/namespaces"); got != string(exempt.UID) || status != http.StatusOK {
		t.Errorf("an admin's request: %d by FlowSchema %q, want 200 by exempt's %s", status, got, exempt.UID)
	}

	// alice's own level: 3 seats (600 × 1 share of 246), none borrowed,
	// the rest rejected.
	pl, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1),
				BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse:         flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs := aliceFlowSchema(t, c, "alice", "alice")
	dangling := aliceFlowSchema(t, c, "alice-dangling", "nowhere")
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := rest.CopyConfig(admin)
	alice.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	// Until the authorizer sees her binding, alice is refused (after
	// classification): retried too.
	servertest.Eventually(t, "alice's requests classified by her FlowSchema", 30*time.Second, func(context.Context) (bool, string) {
		got, status := classified(t, alice, "/api/v1/namespaces/default/configmaps")
		return got == string(fs.UID) && status == http.StatusOK, fmt.Sprintf("%d by FlowSchema %s", status, got)
	})
	for _, tc := range []struct {
		name string
		want flowcontrolv1.ConditionStatus
	}{{fs.Name, flowcontrolv1.ConditionFalse}, {dangling.Name, flowcontrolv1.ConditionTrue}} {
		servertest.Eventually(t, tc.name+" Dangling="+string(tc.want), 30*time.Second, func(ctx context.Context) (bool, string) {
			got, err := fc.FlowSchemas().Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == flowcontrolv1.FlowSchemaConditionDangling {
					return cond.Status == tc.want, fmt.Sprintf("%+v", cond)
				}
			}
			return false, "no Dangling condition"
		})
	}

	// More established watches than alice's level has seats: her next
	// request still runs.
	aliceClient := kubernetes.NewForConfigOrDie(alice)
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	for i := range 6 {
		w, err := aliceClient.CoreV1().ConfigMaps("default").Watch(watchCtx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
		defer w.Stop()
	}
	if _, err := aliceClient.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("a list beside 6 watches at a level of %s: %v", pl.Name, err)
	}
}

// aliceFlowSchema makes a FlowSchema that sends every request of user
// alice to priority level level.
func aliceFlowSchema(t *testing.T, c kubernetes.Interface, name, level string) *flowcontrolv1.FlowSchema {
	t.Helper()
	fs, err := c.FlowcontrolV1().FlowSchemas().Create(context.Background(), &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         500,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"},
					Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// classified GETs path with cfg and returns the UID of the FlowSchema the
// answer says classified it, and the answer's status code.
func classified(t *testing.T, cfg *rest.Config, path string) (string, int) {
	t.Helper()
	r := get(t, cfg, path)
	return r.header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID), r.status
}
