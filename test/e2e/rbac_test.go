package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-lab/skiff/jointoken"
)

// TestKubectlRBACObjects: roles and bindings made and read with kubectl as
// users make them (create role/clusterrole/rolebinding/clusterrolebinding,
// get -o wide, describe); a binding's role cannot be changed; what is not
// served answers as kube-apiserver does.
func TestKubectlRBACObjects(t *testing.T) {
	c := startCluster(t)
	c.must("create", "namespace", "team")
	c.must("-n", "team", "create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods")
	c.must("create", "clusterrole", "node-viewer", "--verb=get", "--resource=nodes", "--non-resource-url=/healthz")
	c.must("-n", "team", "create", "rolebinding", "bob-reads", "--role=pod-reader", "--user=bob", "--group=devs", "--serviceaccount=team:ci")
	c.must("create", "clusterrolebinding", "amy-views", "--clusterrole=node-viewer", "--user=amy")

	if out := c.must("-n", "team", "get", "rolebindings", "-o", "wide"); !regexp.MustCompile(`bob-reads\s+Role/pod-reader\s+\S+\s+bob\s+devs\s+team/ci`).MatchString(out) {
		t.Errorf("get rolebindings -o wide:\n%s", out)
	}
	expectContains(t, "get clusterrolebinding", c.must("get", "clusterrolebinding", "amy-views"), "ClusterRole/node-viewer")
	expectContains(t, "get roles", c.must("-n", "team", "get", "roles"), "CREATED AT", "pod-reader")
	expectContains(t, "describe role", c.must("-n", "team", "describe", "role", "pod-reader"), "pods", "[get list watch]")
	expectContains(t, "describe clusterrole", c.must("describe", "clusterrole", "node-viewer"), "/healthz", "nodes")

	_, errOut, err := c.kubectl("-n", "team", "patch", "rolebinding", "bob-reads", "--type=merge", "-p", `{"roleRef":{"name":"other"}}`)
	if err == nil || !strings.Contains(errOut, "cannot change roleRef") {
		t.Errorf("changing a binding's role: %v %s", err, errOut)
	}
	_, errOut, err = c.kubectl("-n", "team", "create", "role", "bad", "--verb=get", "--resource=pods", "--resource-name=a", "--resource=secrets")
	if err == nil || !strings.Contains(errOut, "resource names cannot apply to multiple resources") {
		t.Errorf("a role naming objects of two resources: %v %s", err, errOut)
	}
	checkKubectlQuota(t, c)
}

// checkKubectlQuota: kubectl create quota, get and describe it; a create
// over it is refused with kube-apiserver's message (the namespace's
// kube-root-ca.crt counts as one of its ConfigMaps); priority classes and
// limit ranges are served too.
func checkKubectlQuota(t *testing.T, c *cluster) {
	c.must("create", "namespace", "limited")
	c.must("-n", "limited", "create", "quota", "q", "--hard=pods=1,configmaps=2")
	waitUntil(t, "the quota counted", func() bool {
		out, _, _ := c.kubectl("-n", "limited", "get", "quota", "q", "-o", "jsonpath={.status.used.configmaps}")
		return out == "1"
	})
	c.must("-n", "limited", "create", "configmap", "a")
	_, errOut, err := c.kubectl("-n", "limited", "create", "configmap", "b")
	if want := `configmaps "b" is forbidden: exceeded quota: q, requested: configmaps=1, used: configmaps=2, limited: configmaps=2`; err == nil || !strings.Contains(errOut, want) {
		t.Errorf("a ConfigMap over quota: %v %s, want %q", err, errOut, want)
	}
	expectContains(t, "get quota", c.must("-n", "limited", "get", "quota"), "configmaps: 2/2, pods: 0/1")
	if out := c.must("-n", "limited", "describe", "quota", "q"); !regexp.MustCompile(`configmaps\s+2\s+2`).MatchString(out) {
		t.Errorf("describe quota:\n%s", out)
	}
	c.must("create", "priorityclass", "high", "--value=1000", "--description=important")
	expectContains(t, "get priorityclasses", c.must("get", "priorityclasses"), "system-node-critical", "2000001000", "high")
	c.mustIn("apiVersion: v1\nkind: LimitRange\nmetadata: {name: mem}\nspec:\n  limits:\n  - {type: Container, max: {memory: 1Gi}}\n",
		"-n", "limited", "apply", "-f", "-")
	expectContains(t, "describe limitrange", c.must("-n", "limited", "describe", "limits", "mem"), "Container", "memory", "1Gi")
}

// TestKubectlAuthWhoami: kubectl auth whoami (a SelfSubjectReview) shows
// who the admin kubeconfig's credentials are; a join token's bootstrapper
// may ask too.
func TestKubectlAuthWhoami(t *testing.T) {
	c := startCluster(t)
	out := c.must("auth", "whoami")
	expectContains(t, "auth whoami", out, "skiff-admin", "system:masters", "system:authenticated")
	out = c.must("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if out != "skiff-admin" {
		t.Errorf("auth whoami -o jsonpath: %q", out)
	}

	token, err := os.ReadFile(filepath.Join(c.dataDir, "server", "token"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jointoken.Parse(strings.TrimSpace(string(token)))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	boot := rest.AnonymousClientConfig(admin)
	boot.BearerToken = tok.Bearer()
	review, err := kubernetes.NewForConfigOrDie(boot).AuthenticationV1().SelfSubjectReviews().Create(context.Background(),
		&authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || review.Status.UserInfo.Username != "system:bootstrap:"+tok.ID || !slices.Contains(review.Status.UserInfo.Groups, "system:bootstrappers") {
		t.Errorf("the bootstrapper's review: %+v %v", review, err)
	}
}

// TestRBACMode runs `skiff server` (Node,RBAC by default) with its own
// node: the default policy lets the node join and run a pod; a user with
// no binding is refused with kube-apiserver's message; bound to view in a
// namespace (aggregated from system:aggregate-to-view), it reads pods
// there but creates nothing and reads no Secret; whoami works for anyone.
func TestRBACMode(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("bob-secret-token,bob,uid-bob,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNodeCluster(t, "--token-auth-file", tokens)
	n.must("run", "hello", "--image="+e2eImage, "--image-pull-policy=Never", "--command", "--", "sleep", "3600")
	n.must("wait", "--for=condition=Ready", "pod/hello", "--timeout=90s")
	n.must("create", "namespace", "team")
	checkComponentsUnderRBAC(t, n.cluster)

	bob := &cluster{t: t, dataDir: t.TempDir(), kubeconfig: userKubeconfig(t, n.kubeconfig, "bob-secret-token")}
	_, errOut, err := bob.kubectl("-n", "team", "get", "pods")
	if want := `pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "team"`; err == nil || !strings.Contains(errOut, want) {
		t.Errorf("bob without a binding: %v %s, want %q", err, errOut, want)
	}
	expectContains(t, "bob's whoami", bob.must("auth", "whoami"), "bob", "devs", "system:authenticated")

	n.must("-n", "team", "create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob")
	waitUntil(t, "bob to read pods in team", func() bool {
		_, _, err := bob.kubectl("-n", "team", "get", "pods")
		return err == nil
	})
	for _, args := range [][]string{
		{"-n", "team", "run", "x", "--image=" + e2eImage},
		{"-n", "team", "get", "secrets"},
		{"-n", "default", "get", "pods"},
	} {
		if _, errOut, err := bob.kubectl(args...); err == nil || !strings.Contains(errOut, "is forbidden: User \"bob\" cannot") {
			t.Errorf("bob %v: %v %s, want forbidden", args, err, errOut)
		}
	}
	checkCanI(t, n.cluster, bob)
	checkEscalation(t, n.cluster, bob)
	checkCreateToken(t, n.cluster)
	checkImpersonation(t, n.cluster, bob)
}

// checkImpersonation: the admin acts as bob with --as; bob may act as amy
// only once a role gives him the impersonate verb on her, and then has
// her rights, not his.
func checkImpersonation(t *testing.T, admin, bob *cluster) {
	if out := strings.TrimSpace(admin.must("auth", "can-i", "list", "pods", "-n", "team", "--as=bob")); out != "yes" {
		t.Errorf("can-i list pods --as=bob: %q", out)
	}
	if out, _, _ := admin.kubectl("auth", "can-i", "get", "secrets", "-n", "team", "--as=bob", "--as-group=devs"); strings.TrimSpace(out) != "no" {
		t.Errorf("can-i get secrets --as=bob: %q", out)
	}
	admin.must("-n", "team", "create", "rolebinding", "amy-secrets", "--clusterrole=admin", "--user=amy")
	_, errOut, err := bob.kubectl("-n", "team", "get", "secrets", "--as=amy")
	if want := `users "amy" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope`; err == nil || !strings.Contains(errOut, want) {
		t.Errorf("bob --as=amy without the verb: %v %s, want %q", err, errOut, want)
	}
	admin.must("create", "clusterrole", "impersonate-amy", "--verb=impersonate", "--resource=users", "--resource-name=amy")
	admin.must("create", "clusterrolebinding", "bob-as-amy", "--clusterrole=impersonate-amy", "--user=bob")
	waitUntil(t, "bob to read team's secrets as amy", func() bool {
		_, _, err := bob.kubectl("-n", "team", "get", "secrets", "--as=amy")
		return err == nil
	})
	_, errOut, err = bob.kubectl("-n", "team", "get", "secrets", "--as=amy", "--as-group=system:masters")
	if want := `groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups"`; err == nil || !strings.Contains(errOut, want) {
		t.Errorf("bob --as=amy --as-group=system:masters: %v %s, want %q", err, errOut, want)
	}
}

// checkCreateToken: kubectl create token gives a service account's JWT
// that kubectl then authenticates with; a duration under ten minutes is
// refused with kube-apiserver's message.
func checkCreateToken(t *testing.T, admin *cluster) {
	admin.must("-n", "team", "create", "serviceaccount", "robot")
	token := strings.TrimSpace(admin.must("-n", "team", "create", "token", "robot", "--duration=15m"))
	robot := &cluster{t: t, dataDir: t.TempDir(), kubeconfig: userKubeconfig(t, admin.kubeconfig, token)}
	expectContains(t, "robot's whoami", robot.must("auth", "whoami"),
		"system:serviceaccount:team:robot", "system:serviceaccounts:team")
	_, errOut, err := admin.kubectl("-n", "team", "create", "token", "robot", "--duration=1m")
	if want := "may not specify a duration less than 10 minutes"; err == nil || !strings.Contains(errOut, want) {
		t.Errorf("a one-minute token: %v %s, want %q", err, errOut, want)
	}
	_, errOut, err = admin.kubectl("-n", "team", "create", "token", "nobody")
	if want := `serviceaccounts "nobody" not found`; err == nil || !strings.Contains(errOut, want) {
		t.Errorf("a token of a missing account: %v %s, want %q", err, errOut, want)
	}
}

// checkComponentsUnderRBAC: the controllers and the scheduler, each with
// only its own role, still do their work: a Deployment's ReplicaSet makes
// pods that are scheduled and run, a Service gets their endpoints, and a
// deleted namespace is emptied and goes; and no part of the server was
// refused anything on the way.
func checkComponentsUnderRBAC(t *testing.T, n *cluster) {
	defer func() {
		if refused := grepLines(withoutNodeGraphRaces(n.log.String()), "forbidden", 10); refused != "" {
			t.Errorf("the server's parts were refused:\n%s", refused)
		}
	}()
	n.must("create", "namespace", "scratch")
	n.must("-n", "scratch", "create", "deployment", "web", "--image="+e2eImage, "--replicas=2", "--", "sleep", "3600")
	n.must("-n", "scratch", "rollout", "status", "deployment/web", "--timeout=120s")
	n.must("-n", "scratch", "expose", "deployment", "web", "--port=80")
	waitUntil(t, "the web Service's two endpoints", func() bool {
		out, _, _ := n.kubectl("-n", "scratch", "get", "endpointslices", "-l", "kubernetes.io/service-name=web",
			"-o", "jsonpath={.items[*].endpoints[*].addresses[0]}")
		return len(strings.Fields(out)) == 2
	})
	n.must("delete", "namespace", "scratch", "--timeout=120s")
}

// checkCanI: kubectl auth can-i answers for bob (view in team) as RBAC
// decides, --list shows his rules, and the admin asks for bob with
// SubjectAccessReview.
func checkCanI(t *testing.T, admin, bob *cluster) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "pods", "-n", "team"}, "yes"},
		{[]string{"get", "pods/log", "-n", "team"}, "yes"},
		{[]string{"create", "pods", "-n", "team"}, "no"},
		{[]string{"get", "secrets", "-n", "team"}, "no"},
		{[]string{"list", "pods", "-n", "default"}, "no"},
		{[]string{"get", "/healthz"}, "yes"},
	} {
		out, _, _ := bob.kubectl(append([]string{"auth", "can-i"}, c.args...)...)
		if strings.TrimSpace(out) != c.want {
			t.Errorf("bob: auth can-i %v = %q, want %s", c.args, out, c.want)
		}
	}
	list := bob.must("auth", "can-i", "--list", "-n", "team")
	if !regexp.MustCompile(`(?m)^pods\s+\[\]\s+\[\]\s+\[get list watch\]`).MatchString(list) || strings.Contains(list, "secrets ") {
		t.Errorf("bob: auth can-i --list -n team:\n%s", list)
	}
	if out := admin.must("auth", "can-i", "*", "*"); strings.TrimSpace(out) != "yes" {
		t.Errorf("admin: auth can-i * *: %q", out)
	}
	// kubectl validates this kind with /openapi/v2 (its v3 path has no
	// PATCH), which has no schema for it: the server validates.
	review := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",
"spec":{"user":"bob","resourceAttributes":{"namespace":"team","verb":"%s","resource":"pods"}}}`
	for verb, want := range map[string]string{"list": "true", "delete": "false"} {
		if out := admin.mustIn(fmt.Sprintf(review, verb), "create", "-f", "-", "-o", "jsonpath={.status.allowed}"); out != want {
			t.Errorf("SubjectAccessReview for bob to %s pods in team: allowed %q, want %s", verb, out, want)
		}
	}
}

// checkEscalation: bob, admin of namespace lab, may hand out what he holds
// there (a role, a binding of edit) but not more (a role on nodes, a
// binding of cluster-admin).
func checkEscalation(t *testing.T, admin, bob *cluster) {
	admin.must("create", "namespace", "lab")
	admin.must("-n", "lab", "create", "rolebinding", "bob-admin", "--clusterrole=admin", "--user=bob")
	waitUntil(t, "bob to be admin of lab", func() bool {
		_, _, err := bob.kubectl("-n", "lab", "create", "role", "pod-reader", "--verb=get", "--resource=pods")
		return err == nil
	})
	bob.must("-n", "lab", "create", "rolebinding", "amy-edit", "--clusterrole=edit", "--user=amy")
	for what, args := range map[string][]string{
		"a role on nodes":            {"-n", "lab", "create", "role", "node-reader", "--verb=get", "--resource=nodes"},
		"a binding of cluster-admin": {"-n", "lab", "create", "rolebinding", "amy-all", "--clusterrole=cluster-admin", "--user=amy"},
	} {
		_, errOut, err := bob.kubectl(args...)
		if err == nil || !strings.Contains(errOut, `user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held`) {
			t.Errorf("bob granting %s: %v %s", what, err, errOut)
		}
	}
}

// userKubeconfig writes a kubeconfig for the cluster of admin's with a
// bearer token and returns its path.
func userKubeconfig(t testing.TB, admin, token string) string {
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData, a.Token = nil, nil, token
	}
	path := filepath.Join(t.TempDir(), "user.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// withoutNodeGraphRaces drops the log lines of the node authorizer's known
// race, as kube-apiserver's has it too: a node's agent that sees its new
// pod before the authorizer's pod informer does is refused that pod's
// ConfigMap or Secret ("no relationship found") once, and its reflector
// tries again. Every other refusal stays.
func withoutNodeGraphRaces(log string) string {
	var kept []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "system:node:") || !strings.Contains(line, "no relationship found between node") {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}
