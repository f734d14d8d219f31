package agent

import (
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestTokensRefresh: a pod's token is asked for bound to the pod, kept
// until 80 % of its lifetime, then asked for again; forgotten pods' tokens
// go.
func TestTokensRefresh(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	client := fake.NewClientset()
	var asked []*authenticationv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		asked = append(asked, tr)
		tr.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", len(asked)),
			ExpirationTimestamp: metav1.NewTime(clk.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
		return true, tr, nil
	})
	tokens := newTokens(client, clk)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p"}, Spec: v1.PodSpec{ServiceAccountName: "robot"}}
	seconds := int64(1000)
	src := &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: &seconds}
	get := func() string {
		tok, err := tokens.get(t.Context(), pod, src)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if tok := get(); tok != "token-1" {
		t.Fatalf("first token %q", tok)
	}
	ref := asked[0].Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" || ref.Name != "p" || ref.UID != "uid-p" || asked[0].Spec.Audiences[0] != "vault" {
		t.Errorf("asked %+v", asked[0].Spec)
	}
	clk.Step(799 * time.Second)
	if tok := get(); tok != "token-1" {
		t.Errorf("at 79.9 %% of its life: %q, want the kept token", tok)
	}
	clk.Step(2 * time.Second)
	if tok := get(); tok != "token-2" {
		t.Errorf("past 80 %%: %q, want a new token", tok)
	}
	tokens.forget(pod.UID)
	if tok := get(); tok != "token-3" || len(asked) != 3 {
		t.Errorf("after forget: %q, %d requests", tok, len(asked))
	}
}
