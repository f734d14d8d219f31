package agent

import (
	"context"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// refreshAt is the share of a token's lifetime after which the kubelet's
// token manager asks for a new one.
const refreshAt = 0.8

// tokenKey is one projected token of one pod.
type tokenKey struct {
	pod      types.UID
	audience string
	seconds  int64
}

// issuedToken is a token and the span it is valid for.
type issuedToken struct {
	token         string
	issued, until time.Time
}

// tokens gets the service account tokens pods project, bound to the pod
// (TokenRequest), and keeps each until 80 % of its lifetime has passed, as
// the kubelet's token manager; the volume's next sync (at the latest the
// periodic resync) writes the new one. Safe for concurrent use.
type tokens struct {
	client kubernetes.Interface
	clock  clock.Clock

	mu    sync.Mutex
	cache map[tokenKey]issuedToken
}

func newTokens(client kubernetes.Interface, clk clock.Clock) *tokens {
	return &tokens{client: client, clock: clk, cache: map[tokenKey]issuedToken{}}
}

// get returns pod's token for src: the kept one, or a new one once that is
// past refreshAt of its lifetime.
func (t *tokens) get(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) (string, error) {
	seconds := int64(60 * 60)
	if src.ExpirationSeconds != nil {
		seconds = *src.ExpirationSeconds
	}
	key := tokenKey{pod.UID, src.Audience, seconds}
	now := t.clock.Now()
	t.mu.Lock()
	kept, ok := t.cache[key]
	t.mu.Unlock()
	if ok && now.Before(kept.issued.Add(time.Duration(refreshAt*float64(kept.until.Sub(kept.issued))))) {
		return kept.token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := t.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, req, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	t.cache[key] = issuedToken{tr.Status.Token, now, tr.Status.ExpirationTimestamp.Time}
	t.mu.Unlock()
	return tr.Status.Token, nil
}

// forget drops the tokens of the pod of uid.
func (t *tokens) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key := range t.cache {
		if key.pod == uid {
			delete(t.cache, key)
		}
	}
}
