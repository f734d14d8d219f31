package rbac

import (
	"cmp"
	"slices"

	"github.com/skiff-lab/skiff/jointoken"
	"github.com/skiff-lab/skiff/podtrace"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Policy is the default RBAC objects.
type Policy struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	Roles               []rbacv1.Role        // with Namespace set
	RoleBindings        []rbacv1.RoleBinding // with Namespace set
}

// ClusterRole returns the policy's cluster role name (empty when it has
// none of that name).
func (p Policy) ClusterRole(name string) rbacv1.ClusterRole {
	for _, r := range p.ClusterRoles {
		if r.Name == name {
			return r
		}
	}
	return rbacv1.ClusterRole{}
}

// Bootstrap returns the default policy (a fresh copy each call).
//
// It is the policy kube-apiserver v1.37 reconciles at every start with its
// default feature gates: the roles and bindings for users (cluster-admin,
// admin, edit, view), for the control-plane components and nodes, and one
// role and binding per kube-controller-manager controller. Every object is
// labelled kubernetes.io/bootstrapping=rbac-defaults and annotated
// rbac.authorization.kubernetes.io/autoupdate=true, so the reconciler may
// add what is missing. admin, edit and view carry only an aggregation rule;
// their rules come from the system:aggregate-to-* roles once aggregated.
// Each kind is sorted by name (Roles and RoleBindings by namespace, then
// name); every list inside a rule is sorted.
func Bootstrap() Policy {
	p := Policy{
		ClusterRoles: slices.Concat(userRoles(), discoveryRoles(), certificateRoles(),
			componentRoles(), nodeRoles(), controllerRoles()),
		ClusterRoleBindings: slices.Concat(clusterRoleBindings(), controllerRoleBindings()),
		Roles:               namespacedRoles(),
		RoleBindings:        namespacedRoleBindings(),
	}
	slices.SortFunc(p.ClusterRoles, func(a, b rbacv1.ClusterRole) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(p.ClusterRoleBindings, func(a, b rbacv1.ClusterRoleBinding) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(p.Roles, func(a, b rbacv1.Role) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(p.RoleBindings, func(a, b rbacv1.RoleBinding) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return p
}

// API groups the default policy names.
const (
	core            = ""
	eventsGroup     = "events.k8s.io"
	apps            = "apps"
	extensions      = "extensions"
	autoscaling     = "autoscaling"
	batch           = "batch"
	policyGroup     = "policy"
	networking      = "networking.k8s.io"
	coordination    = "coordination.k8s.io"
	discovery       = "discovery.k8s.io"
	resourceGroup   = "resource.k8s.io"
	storage         = "storage.k8s.io"
	nodeGroup       = "node.k8s.io"
	certificates    = "certificates.k8s.io"
	authentication  = "authentication.k8s.io"
	authorization   = "authorization.k8s.io"
	admission       = "admissionregistration.k8s.io"
	apiextensions   = "apiextensions.k8s.io"
	storageMigrate  = "storagemigration.k8s.io"
	resourceMetrics = "metrics.k8s.io"
	customMetrics   = "custom.metrics.k8s.io"
	externalMetrics = "external.metrics.k8s.io"
)

// Verb sets the default policy uses over and over.
var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "delete", "deletecollection", "patch", "update"}
	readWrite = slices.Concat(read, write)
)

// Metadata every default object carries.
const (
	bootstrappingLabel = "kubernetes.io/bootstrapping"
	bootstrappingValue = "rbac-defaults"
	autoupdateKey      = "rbac.authorization.kubernetes.io/autoupdate"
	aggregateToPrefix  = "rbac.authorization.k8s.io/aggregate-to-"
	controllerPrefix   = "system:controller:"
	systemNamespace    = "kube-system"
	publicNamespace    = "kube-public"
)

// ruleSpec is a PolicyRule under construction: grant says which verbs,
// in/on/named/urls say on what. Each step keeps its list sorted, as
// upstream's stored objects are, so equal rules compare equal.
type ruleSpec rbacv1.PolicyRule

// grant starts a rule that allows verbs.
func grant(verbs ...string) ruleSpec { return ruleSpec{Verbs: sorted(verbs)} }

// in sets the API groups.
func (r ruleSpec) in(groups ...string) ruleSpec { r.APIGroups = sorted(groups); return r }

// on sets the resources ("resource/subresource" for a subresource).
func (r ruleSpec) on(resources ...string) ruleSpec { r.Resources = sorted(resources); return r }

// named limits the rule to objects of these names.
func (r ruleSpec) named(names ...string) ruleSpec { r.ResourceNames = sorted(names); return r }

// urls makes a non-resource rule for these paths ("*" ends a prefix).
func (r ruleSpec) urls(paths ...string) ruleSpec { r.NonResourceURLs = sorted(paths); return r }

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// rules turns specs into PolicyRules sharing no memory with each other or
// with the specs; no specs give nil rules, as an aggregating role has.
func rules(specs ...ruleSpec) []rbacv1.PolicyRule {
	if len(specs) == 0 {
		return nil
	}
	out := make([]rbacv1.PolicyRule, len(specs))
	for i, s := range specs {
		out[i] = rbacv1.PolicyRule{
			Verbs:           slices.Clone(s.Verbs),
			APIGroups:       slices.Clone(s.APIGroups),
			Resources:       slices.Clone(s.Resources),
			ResourceNames:   slices.Clone(s.ResourceNames),
			NonResourceURLs: slices.Clone(s.NonResourceURLs),
		}
	}
	return out
}

// recordEvents lets a component write events in both event APIs.
func recordEvents() ruleSpec {
	return grant("create", "update", "patch").in(core, eventsGroup).on("events")
}

// defaultMeta is the metadata of a default object: its name (and namespace,
// for namespaced ones), the bootstrapping label and the autoupdate annotation.
func defaultMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:   namespace,
		Name:        name,
		Labels:      map[string]string{bootstrappingLabel: bootstrappingValue},
		Annotations: map[string]string{autoupdateKey: "true"},
	}
}

func clusterRole(name string, specs ...ruleSpec) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: defaultMeta("", name), Rules: rules(specs...)}
}

// aggregatesInto labels r so that the role aggregating target picks up
// its rules.
func aggregatesInto(r rbacv1.ClusterRole, target string) rbacv1.ClusterRole {
	r.Labels[aggregateToPrefix+target] = "true"
	return r
}

// aggregating is a role with no rules of its own: it gathers those of every
// cluster role labelled aggregate-to-<from>.
func aggregating(name, from string) rbacv1.ClusterRole {
	r := clusterRole(name)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{aggregateToPrefix + from: "true"}},
	}}
	return r
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func serviceAccountSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// clusterRoleBinding binds the cluster role of the same name to subjects.
func clusterRoleBinding(name string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: defaultMeta("", name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   subjects,
	}
}

func role(namespace, name string, specs ...ruleSpec) rbacv1.Role {
	return rbacv1.Role{ObjectMeta: defaultMeta(namespace, name), Rules: rules(specs...)}
}

// roleBinding binds the Role roleName of namespace to subjects.
func roleBinding(namespace, name, roleName string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{
		ObjectMeta: defaultMeta(namespace, name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects:   subjects,
	}
}

// userRoles are the roles meant for people: cluster-admin, and admin ⊇ edit
// ⊇ view built by aggregation (edit is labelled into admin, view into edit),
// with the built-in content in the system:aggregate-to-* roles.
func userRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		clusterRole("cluster-admin", grant("*").in("*").on("*"), grant("*").urls("*")),
		aggregating("admin", "admin"),
		aggregatesInto(aggregating("edit", "edit"), "admin"),
		aggregatesInto(aggregating("view", "view"), "edit"),
		aggregatesInto(clusterRole("system:aggregate-to-admin",
			grant("create").in(authorization).on("localsubjectaccessreviews"),
			grant(readWrite...).in("rbac.authorization.k8s.io").on("rolebindings", "roles"),
		), "admin"),
		aggregatesInto(clusterRole("system:aggregate-to-edit", editRules()...), "edit"),
		aggregatesInto(clusterRole("system:aggregate-to-view", viewRules()...), "view"),
	}
}

// editRules let a namespace editor change workloads and their config,
// secrets included, but not quotas, limits or status.
func editRules() []ruleSpec {
	return []ruleSpec{
		grant(read...).in(core).on("pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"),
		grant("impersonate").in(core).on("serviceaccounts"),
		grant(write...).in(core).on("pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"),
		grant("create").in(core).on("pods/eviction"),
		grant(write...).in(core).on("configmaps", "persistentvolumeclaims", "replicationcontrollers",
			"replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"),
		grant("create").in(core).on("serviceaccounts/token"),
		grant(write...).in(core, eventsGroup).on("events"),
		grant(write...).in(apps).on("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
			"replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"),
		grant(write...).in(autoscaling).on("horizontalpodautoscalers"),
		grant(write...).in(batch).on("cronjobs", "jobs"),
		grant(write...).in(extensions).on("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
			"ingresses", "networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale"),
		grant(write...).in(policyGroup).on("poddisruptionbudgets"),
		grant(write...).in(networking).on("ingresses", "networkpolicies"),
		grant(readWrite...).in(coordination).on("leases"),
		grant(write...).in(resourceGroup).on("resourceclaims", "resourceclaimtemplates"),
	}
}

// viewRules let a namespace viewer read what is not secret.
func viewRules() []ruleSpec {
	return []ruleSpec{
		grant(read...).in(core).on("configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
			"pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"),
		grant(read...).in(core).on("bindings", "limitranges", "namespaces/status", "pods/explain", "pods/log", "pods/status",
			"replicationcontrollers/status", "resourcequotas", "resourcequotas/status"),
		grant(read...).in(core).on("namespaces"),
		grant(read...).in(core, eventsGroup).on("events"),
		grant(read...).in(discovery).on("endpointslices"),
		grant(read...).in(apps).on("controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
			"deployments/scale", "deployments/status", "replicasets", "replicasets/scale", "replicasets/status",
			"statefulsets", "statefulsets/scale", "statefulsets/status"),
		grant(read...).in(autoscaling).on("horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		grant(read...).in(batch).on("cronjobs", "cronjobs/status", "jobs", "jobs/status"),
		grant(read...).in(extensions).on("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
			"deployments/status", "ingresses", "ingresses/status", "networkpolicies", "replicasets",
			"replicasets/scale", "replicasets/status", "replicationcontrollers/scale"),
		grant(read...).in(policyGroup).on("poddisruptionbudgets", "poddisruptionbudgets/status"),
		grant(read...).in(networking).on("ingresses", "ingresses/status", "networkpolicies"),
		grant(read...).in(resourceGroup).on("resourceclaims", "resourceclaims/status", "resourceclaimtemplates"),
	}
}

// discoveryRoles let anyone learn about the server and themselves, and
// monitoring read health and metrics.
func discoveryRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		clusterRole("system:discovery", grant("get").urls("/api", "/api/*", "/apis", "/apis/*", "/healthz",
			"/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")),
		clusterRole("system:public-info-viewer", grant("get").urls("/healthz", "/livez", "/readyz", "/version", "/version/")),
		clusterRole("system:basic-user",
			grant("create").in(authorization).on("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			grant("create").in(authentication).on("selfsubjectreviews"),
		),
		clusterRole("system:monitoring",
			grant("get").urls("/flagz", "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics",
				"/metrics/slis", "/readyz", "/readyz/*", "/statusz"),
			grant("get").in(core).on("nodes/metrics"),
		),
		clusterRole("system:service-account-issuer-discovery", grant("get").urls("/.well-known/openid-configuration",
			"/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/")),
		clusterRole("system:auth-delegator",
			grant("create").in(authentication).on("tokenreviews"),
			grant("create").in(authorization).on("subjectaccessreviews"),
		),
		clusterRole("system:cluster-trust-bundle-discovery", grant(read...).in(certificates).on("clustertrustbundles")),
	}
}

// certificateRoles let kubelets ask for certificates and approvers approve
// them, one built-in signer per approver role.
func certificateRoles() []rbacv1.ClusterRole {
	approver := func(name, signer string) rbacv1.ClusterRole {
		return clusterRole("system:certificates.k8s.io:"+name,
			grant("approve").in(certificates).on("signers").named("kubernetes.io/"+signer))
	}
	return []rbacv1.ClusterRole{
		clusterRole("system:node-bootstrapper",
			grant("create", "get", "list", "watch").in(certificates).on("certificatesigningrequests")),
		// A server joining the cluster with a server token fetches what the
		// servers share and asks for its etcd member.
		clusterRole("system:skiff:server-joiner", grant("get").urls("/skiff/v1/server-bootstrap"),
			grant("post", "delete").urls("/skiff/v1/etcd-members", "/skiff/v1/etcd-members/*")),
		// Nodes report the steps of their pods' journeys (OTLP/HTTP).
		clusterRole("system:skiff:trace-reporter", grant("post").urls(podtrace.ReportPath)),
		// A server forwards the steps it takes to the others, and reads
		// theirs when it starts (podtrace.Peers).
		clusterRole("system:skiff:journey-peer", grant("post").urls(podtrace.ReportPath), grant("get").urls("/ui/journeys")),
		// The journey page shows every pod's journey, in every namespace,
		// with the nodes; bound to nobody: an administrator binds it.
		clusterRole("system:skiff:journey-viewer", grant("get").urls("/ui", "/ui/*"),
			grant("get", "list", "watch").in(core).on("nodes")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			grant("create").in(certificates).on("certificatesigningrequests/nodeclient")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			grant("create").in(certificates).on("certificatesigningrequests/selfnodeclient")),
		approver("kube-apiserver-client-approver", "kube-apiserver-client"),
		approver("kube-apiserver-client-kubelet-approver", "kube-apiserver-client-kubelet"),
		approver("kubelet-serving-approver", "kubelet-serving"),
		approver("legacy-unknown-approver", "legacy-unknown"),
	}
}

// componentRoles are for the control-plane components and cluster add-ons.
func componentRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		clusterRole("system:kube-controller-manager", controllerManagerRules()...),
		clusterRole("system:kube-scheduler", schedulerRules()...),
		clusterRole("system:volume-scheduler",
			grant("get", "list", "watch", "patch", "update").in(core).on("persistentvolumes"),
			grant(read...).in(storage).on("storageclasses"),
			grant("get", "list", "watch", "patch", "update").in(core).on("persistentvolumeclaims"),
		),
		clusterRole("system:kube-aggregator", grant(read...).in(core).on("endpoints", "services")),
		clusterRole("system:kube-dns", grant("list", "watch").in(core).on("endpoints", "services")),
		clusterRole("system:heapster",
			grant(read...).in(core).on("events", "namespaces", "nodes", "pods"),
			grant(read...).in(extensions).on("deployments"),
		),
		clusterRole("system:persistent-volume-provisioner",
			grant("create", "delete", "get", "list", "watch").in(core).on("persistentvolumes"),
			grant("get", "list", "update", "watch").in(core).on("persistentvolumeclaims"),
			grant(read...).in(storage).on("storageclasses"),
			grant("watch").in(core).on("events"),
			recordEvents(),
		),
	}
}

// controllerManagerRules let kube-controller-manager hold its lease, read
// everything for its informers and mint per-controller credentials.
func controllerManagerRules() []ruleSpec {
	return []ruleSpec{
		recordEvents(),
		grant("create").in(coordination).on("leases"),
		grant("get", "update").in(coordination).on("leases").named("kube-controller-manager"),
		grant("create").in(core).on("secrets", "serviceaccounts"),
		grant("delete").in(core).on("secrets"),
		grant("get").in(core).on("configmaps", "namespaces", "secrets", "serviceaccounts"),
		grant("update").in(core).on("secrets", "serviceaccounts"),
		grant("create").in(authentication).on("tokenreviews"),
		grant("create").in(authorization).on("subjectaccessreviews"),
		grant("list", "watch").in("*").on("*"),
		grant("create").in(core).on("serviceaccounts/token"),
	}
}

// schedulerRules let kube-scheduler hold its lease, read what placement
// depends on, bind pods and allocate dynamic resources.
func schedulerRules() []ruleSpec {
	return []ruleSpec{
		recordEvents(),
		grant("create").in(coordination).on("leases"),
		grant("get", "list", "update", "watch").in(coordination).on("leases").named("kube-scheduler"),
		grant(readWrite...).in(coordination).on("leasecandidates"),
		grant(read...).in(core).on("nodes"),
		grant("delete", "get", "list", "watch").in(core).on("pods"),
		grant("create").in(core).on("bindings", "pods/binding"),
		grant("patch", "update").in(core).on("pods/status"),
		grant(read...).in(core).on("replicationcontrollers", "services"),
		grant(read...).in(apps, extensions).on("replicasets"),
		grant(read...).in(apps).on("statefulsets"),
		grant(read...).in(policyGroup).on("poddisruptionbudgets"),
		grant(read...).in(core).on("persistentvolumeclaims", "persistentvolumes"),
		grant("create").in(authentication).on("tokenreviews"),
		grant("create").in(authorization).on("subjectaccessreviews"),
		grant(read...).in(storage).on("csinodes"),
		grant(read...).in(storage).on("volumeattachments"),
		grant(read...).in(core).on("namespaces"),
		grant(read...).in(storage).on("csidrivers"),
		grant(read...).in(storage).on("csistoragecapacities"),
		grant(read...).in(resourceGroup).on("deviceclasses"),
		grant("get", "list", "patch", "update", "watch").in(resourceGroup).on("resourceclaims"),
		grant("get", "list", "patch", "update", "watch").in(resourceGroup).on("resourceclaims/status"),
		grant("update").in(core).on("pods/finalizers"),
		grant(read...).in(resourceGroup).on("resourceslices"),
		grant("create", "delete").in(resourceGroup).on("resourceclaims"),
		grant(read...).in(resourceGroup).on("devicetaintrules"),
		grant("patch", "update").in(resourceGroup).on("resourceclaims/binding"),
	}
}

// nodeRoles are for kubelets, kube-proxy, node-problem-detector and
// whoever administers kubelets' APIs.
func nodeRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		clusterRole("system:node", kubeletRules()...),
		clusterRole("system:node-proxier",
			grant("list", "watch").in(core).on("endpoints", "services"),
			grant(read...).in(core).on("nodes"),
			recordEvents(),
			grant("list", "watch").in(networking).on("servicecidrs"),
			grant("list", "watch").in(discovery).on("endpointslices"),
		),
		clusterRole("system:node-problem-detector",
			grant("get").in(core).on("nodes"),
			grant("patch").in(core).on("nodes/status"),
			recordEvents(),
		),
		clusterRole("system:kubelet-api-admin",
			grant(read...).in(core).on("nodes"),
			grant("proxy").in(core).on("nodes"),
			grant("*").in(core).on("nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"),
			grant("*").in(core).on("nodes/configz", "nodes/healthz", "nodes/pods"),
		),
	}
}

// kubeletRules are what a kubelet needs to register its node and run its
// pods. The system:node binding names no one: the Node authorizer decides
// kubelets' requests.
func kubeletRules() []ruleSpec {
	return []ruleSpec{
		grant("create").in(authentication).on("tokenreviews"),
		grant("create").in(authorization).on("localsubjectaccessreviews", "subjectaccessreviews"),
		grant(read...).in(core).on("services"),
		grant("create", "get", "list", "watch").in(core).on("nodes"),
		grant("patch", "update").in(core).on("nodes/status"),
		grant("patch", "update").in(core).on("nodes"),
		recordEvents(),
		grant(read...).in(core).on("pods"),
		grant("create", "delete").in(core).on("pods"),
		grant("patch", "update").in(core).on("pods/status"),
		grant("create").in(core).on("pods/eviction"),
		grant(read...).in(core).on("configmaps", "secrets"),
		grant("get").in(core).on("persistentvolumeclaims", "persistentvolumes"),
		grant("get").in(core).on("endpoints"),
		grant("create", "get", "list", "watch").in(certificates).on("certificatesigningrequests"),
		grant("create", "delete", "get", "patch", "update").in(coordination).on("leases"),
		grant("get").in(storage).on("volumeattachments"),
		grant("create").in(core).on("serviceaccounts/token"),
		grant("get", "patch", "update").in(core).on("persistentvolumeclaims/status"),
		grant(read...).in(storage).on("csidrivers"),
		grant("create", "delete", "get", "patch", "update").in(storage).on("csinodes"),
		grant(read...).in(nodeGroup).on("runtimeclasses"),
		grant("get").in(resourceGroup).on("resourceclaims"),
		grant("deletecollection").in(resourceGroup).on("resourceslices"),
		grant(read...).in(certificates).on("clustertrustbundles"),
		grant("get").in(core).on("serviceaccounts"),
		grant("create", "get", "list", "watch").in(certificates).on("podcertificaterequests"),
	}
}

// clusterRoleBindings bind the roles above to the users and groups the
// authenticators give the components, nodes and everyone.
func clusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterRoleBinding("cluster-admin", groupSubject(user.SystemPrivilegedGroup)),
		clusterRoleBinding("system:discovery", groupSubject(user.AllAuthenticated)),
		clusterRoleBinding("system:basic-user", groupSubject(user.AllAuthenticated)),
		clusterRoleBinding("system:public-info-viewer",
			groupSubject(user.AllAuthenticated), groupSubject(user.AllUnauthenticated)),
		clusterRoleBinding("system:monitoring", groupSubject(user.MonitoringGroup)),
		clusterRoleBinding("system:skiff:server-joiner", groupSubject(jointoken.ServersGroup)),
		clusterRoleBinding("system:skiff:trace-reporter", groupSubject(user.NodesGroup)),
		clusterRoleBinding("system:skiff:journey-peer", userSubject(podtrace.PeerUser)),
		clusterRoleBinding("system:service-account-issuer-discovery", groupSubject(serviceaccount.AllServiceAccountsGroup)),
		clusterRoleBinding("system:cluster-trust-bundle-discovery", groupSubject(serviceaccount.AllServiceAccountsGroup)),
		// Nodes are authorized by the Node authorizer: the binding names no
		// subjects.
		clusterRoleBinding("system:node"),
		clusterRoleBinding("system:node-proxier", userSubject(user.KubeProxy)),
		clusterRoleBinding("system:kube-controller-manager", userSubject(user.KubeControllerManager)),
		clusterRoleBinding("system:kube-dns", serviceAccountSubject(systemNamespace, "kube-dns")),
		clusterRoleBinding("system:kube-scheduler", userSubject(user.KubeScheduler)),
		clusterRoleBinding("system:volume-scheduler", userSubject(user.KubeScheduler)),
	}
}

// controllerRoles are one role per kube-controller-manager controller, named
// system:controller:<controller>; controllerRoleBindings bind each to the
// kube-system service account of the controller's name.
func controllerRoles() []rbacv1.ClusterRole {
	var out []rbacv1.ClusterRole
	for _, c := range slices.Concat(workloadControllers(), jobControllers(), scalingControllers(),
		cleanupControllers(), nodeAndNetworkControllers(), draControllers(), storageControllers(), apiControllers()) {
		out = append(out, clusterRole(controllerPrefix+c.name, c.rules...))
	}
	return out
}

func controllerRoleBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for _, r := range controllerRoles() {
		name := r.Name[len(controllerPrefix):]
		out = append(out, clusterRoleBinding(r.Name, serviceAccountSubject(systemNamespace, name)))
	}
	return out
}

// controller is a kube-controller-manager controller's name and rules.
type controller struct {
	name  string
	rules []ruleSpec
}

// workloadControllers keep pods running for their owners.
func workloadControllers() []controller {
	return []controller{
		{"deployment-controller", []ruleSpec{
			grant("get", "list", "watch", "update").in(apps, extensions).on("deployments"),
			grant("update").in(apps, extensions).on("deployments/status"),
			grant("update").in(apps, extensions).on("deployments/finalizers"),
			grant("get", "list", "watch", "create", "update", "patch", "delete").in(apps, extensions).on("replicasets"),
			grant("get", "list", "watch", "update").in(core).on("pods"),
			recordEvents(),
		}},
		{"replicaset-controller", []ruleSpec{
			grant("get", "list", "watch", "update").in(apps, extensions).on("replicasets"),
			grant("update").in(apps, extensions).on("replicasets/status"),
			grant("update").in(apps, extensions).on("replicasets/finalizers"),
			grant("list", "watch", "patch", "create", "delete").in(core).on("pods"),
			recordEvents(),
		}},
		{"replication-controller", []ruleSpec{
			grant("get", "list", "watch", "update").in(core).on("replicationcontrollers"),
			grant("update").in(core).on("replicationcontrollers/status"),
			grant("update").in(core).on("replicationcontrollers/finalizers"),
			grant("list", "watch", "patch", "create", "delete").in(core).on("pods"),
			recordEvents(),
		}},
		{"statefulset-controller", []ruleSpec{
			grant("list", "watch").in(core).on("pods"),
			grant(read...).in(apps).on("statefulsets"),
			grant("update").in(apps).on("statefulsets/status"),
			grant("update").in(apps).on("statefulsets/finalizers"),
			grant("get", "create", "delete", "update", "patch").in(core).on("pods"),
			grant("get", "create", "delete", "update", "patch", "list", "watch").in(apps).on("controllerrevisions"),
			grant("get", "create", "list", "watch").in(core).on("persistentvolumeclaims"),
			grant("update", "delete").in(core).on("persistentvolumeclaims"),
			grant("update").in(core).on("pods/finalizers"),
			recordEvents(),
		}},
		{"daemon-set-controller", []ruleSpec{
			grant(read...).in(apps, extensions).on("daemonsets"),
			grant("update").in(apps, extensions).on("daemonsets/status"),
			grant("update").in(apps, extensions).on("daemonsets/finalizers"),
			grant("list", "watch").in(core).on("nodes"),
			grant("list", "watch", "create", "delete", "patch").in(core).on("pods"),
			grant("create").in(core).on("pods/binding"),
			grant("get", "list", "watch", "create", "delete", "update", "patch").in(apps).on("controllerrevisions"),
			recordEvents(),
		}},
	}
}

// jobControllers run jobs, on schedule, and clean them up.
func jobControllers() []controller {
	return []controller{
		{"cronjob-controller", []ruleSpec{
			grant("get", "list", "watch", "update").in(batch).on("cronjobs"),
			grant("get", "list", "watch", "create", "update", "delete", "patch").in(batch).on("jobs"),
			grant("update").in(batch).on("cronjobs/status"),
			grant("update").in(batch).on("cronjobs/finalizers"),
			grant("list", "watch", "delete").in(core).on("pods"),
			recordEvents(),
		}},
		{"job-controller", []ruleSpec{
			grant("get", "list", "watch", "update", "patch").in(batch).on("jobs"),
			grant("update").in(batch).on("jobs/status"),
			grant("update").in(batch).on("jobs/finalizers"),
			grant("list", "watch", "create", "delete", "patch").in(core).on("pods"),
			recordEvents(),
		}},
		{"ttl-after-finished-controller", []ruleSpec{
			grant("get", "list", "watch", "delete").in(batch).on("jobs"),
			recordEvents(),
		}},
	}
}

// scalingControllers scale workloads and guard their availability.
func scalingControllers() []controller {
	return []controller{
		{"horizontal-pod-autoscaler", []ruleSpec{
			grant(read...).in(autoscaling).on("horizontalpodautoscalers"),
			grant("update").in(autoscaling).on("horizontalpodautoscalers/status"),
			grant("get", "update").in("*").on("*/scale"),
			grant("list", "watch").in(core).on("pods"),
			grant("list", "watch").in(resourceMetrics).on("pods"),
			grant(read...).in(customMetrics).on("*"),
			grant(read...).in(externalMetrics).on("*"),
			recordEvents(),
		}},
		{"disruption-controller", []ruleSpec{
			grant(read...).in(apps, extensions).on("deployments"),
			grant(read...).in(apps, extensions).on("replicasets"),
			grant(read...).in(core).on("replicationcontrollers"),
			grant(read...).in(policyGroup).on("poddisruptionbudgets"),
			grant(read...).in(apps).on("statefulsets"),
			grant("update").in(policyGroup).on("poddisruptionbudgets/status"),
			grant("patch", "update").in(core).on("pods/status"),
			grant("get").in("*").on("*/scale"),
			recordEvents(),
		}},
	}
}

// cleanupControllers delete what is left over and keep the books.
func cleanupControllers() []controller {
	return []controller{
		{"pod-garbage-collector", []ruleSpec{
			grant("list", "watch", "delete").in(core).on("pods"),
			grant(read...).in(core).on("nodes"),
			grant("patch").in(core).on("pods/status"),
		}},
		{"generic-garbage-collector", []ruleSpec{
			grant("get", "list", "watch", "patch", "update", "delete").in("*").on("*"),
			recordEvents(),
		}},
		{"resourcequota-controller", []ruleSpec{
			grant("list", "watch").in("*").on("*"),
			grant("update").in(core).on("resourcequotas/status"),
			recordEvents(),
		}},
		{"namespace-controller", []ruleSpec{
			grant("get", "list", "watch", "delete").in(core).on("namespaces"),
			grant("update").in(core).on("namespaces/finalize", "namespaces/status"),
			grant("get", "list", "watch", "delete", "deletecollection").in("*").on("*"),
		}},
	}
}

// nodeAndNetworkControllers watch nodes and wire services to endpoints.
func nodeAndNetworkControllers() []controller {
	return []controller{
		{"node-controller", []ruleSpec{
			grant("get", "list", "watch", "update", "delete", "patch").in(core).on("nodes"),
			grant("patch", "update").in(core).on("nodes/status"),
			grant("patch", "update").in(core).on("pods/status"),
			grant("list", "watch", "get", "delete").in(core).on("pods"),
			grant(read...).in(coordination).on("leases"),
			recordEvents(),
		}},
		{"ttl-controller", []ruleSpec{
			grant("update", "patch", "list", "watch").in(core).on("nodes"),
			recordEvents(),
		}},
		{"route-controller", []ruleSpec{
			grant("list", "watch").in(core).on("nodes"),
			grant("patch").in(core).on("nodes/status"),
			recordEvents(),
		}},
		{"service-controller", []ruleSpec{
			grant(read...).in(core).on("services"),
			grant("patch", "update").in(core).on("services/status"),
			grant("list", "watch").in(core).on("nodes"),
			recordEvents(),
		}},
		{"service-cidrs-controller", []ruleSpec{
			grant("get", "list", "watch", "patch", "update").in(networking).on("servicecidrs"),
			grant("patch", "update").in(networking).on("servicecidrs/finalizers"),
			grant("patch", "update").in(networking).on("servicecidrs/status"),
			grant(read...).in(networking).on("ipaddresses"),
			recordEvents(),
		}},
		{"endpoint-controller", []ruleSpec{
			grant(read...).in(core).on("pods", "services"),
			grant("get", "list", "watch", "create", "update", "delete").in(core).on("endpoints"),
			grant("create").in(core).on("endpoints/restricted"),
			recordEvents(),
		}},
		{"endpointslice-controller", []ruleSpec{
			grant(read...).in(core).on("nodes", "pods", "services"),
			grant("update").in(core).on("services/finalizers"),
			grant("get", "list", "watch", "create", "update", "delete").in(discovery).on("endpointslices"),
			recordEvents(),
		}},
		{"endpointslicemirroring-controller", []ruleSpec{
			grant(read...).in(core).on("endpoints", "services"),
			grant("update").in(core).on("services/finalizers"),
			grant("update").in(core).on("endpoints/finalizers"),
			grant("get", "list", "watch", "create", "update", "delete").in(discovery).on("endpointslices"),
			recordEvents(),
		}},
	}
}

// draControllers look after dynamic resource allocation.
func draControllers() []controller {
	return []controller{
		{"resource-claim-controller", []ruleSpec{
			grant(read...).in(core).on("pods"),
			grant("update").in(core).on("pods/finalizers"),
			grant("get", "list", "watch", "create", "delete").in(resourceGroup).on("resourceclaims"),
			grant("update", "patch").in(resourceGroup).on("resourceclaims", "resourceclaims/status"),
			grant("update", "patch").in(core).on("pods/status"),
			recordEvents(),
			grant("update", "patch").in(resourceGroup).on("resourceclaims/binding"),
		}},
		{"device-taint-eviction-controller", []ruleSpec{
			grant("get", "list", "watch", "delete").in(core).on("pods"),
			grant("update", "patch").in(core).on("pods/status"),
			grant(read...).in(resourceGroup).on("resourceclaims"),
			grant(read...).in(resourceGroup).on("resourceslices"),
			grant(read...).in(resourceGroup).on("deviceclasses"),
			recordEvents(),
			grant("update", "patch").in(resourceGroup).on("devicetaintrules/status"),
			grant(read...).in(resourceGroup).on("devicetaintrules"),
		}},
	}
}

// storageControllers bind, attach, expand and protect volumes.
func storageControllers() []controller {
	return []controller{
		{"attachdetach-controller", []ruleSpec{
			grant("list", "watch").in(core).on("persistentvolumeclaims", "persistentvolumes"),
			grant(read...).in(core).on("nodes"),
			grant("patch", "update").in(core).on("nodes/status"),
			grant("list", "watch").in(core).on("pods"),
			recordEvents(),
			grant("get", "create", "delete", "list", "watch").in(storage).on("volumeattachments"),
			grant(read...).in(storage).on("csidrivers"),
			grant(read...).in(storage).on("csinodes"),
		}},
		{"expand-controller", []ruleSpec{
			grant("get", "list", "watch", "update", "patch").in(core).on("persistentvolumes"),
			grant("update", "patch").in(core).on("persistentvolumeclaims/status"),
			grant(read...).in(core).on("persistentvolumeclaims"),
			recordEvents(),
		}},
		{"ephemeral-volume-controller", []ruleSpec{
			grant(read...).in(core).on("pods"),
			grant("update").in(core).on("pods/finalizers"),
			grant("get", "list", "watch", "create").in(core).on("persistentvolumeclaims"),
			recordEvents(),
		}},
		{"persistent-volume-binder", []ruleSpec{
			grant("get", "list", "watch", "update", "create", "delete").in(core).on("persistentvolumes"),
			grant("update").in(core).on("persistentvolumes/status"),
			grant("get", "list", "watch", "update").in(core).on("persistentvolumeclaims"),
			grant("update").in(core).on("persistentvolumeclaims/status"),
			grant("list", "watch", "get", "create", "delete").in(core).on("pods"),
			grant(read...).in(storage).on("storageclasses"),
			grant("list", "watch").in(core).on("nodes"),
			recordEvents(),
			grant("watch").in(core).on("events"),
		}},
		{"pvc-protection-controller", []ruleSpec{
			grant("get", "list", "watch", "update").in(core).on("persistentvolumeclaims"),
			grant("update").in(core).on("persistentvolumeclaims/status"),
			grant(read...).in(core).on("pods"),
			recordEvents(),
		}},
		{"pv-protection-controller", []ruleSpec{
			grant("get", "list", "watch", "update").in(core).on("persistentvolumes"),
			recordEvents(),
		}},
		{"volumeattributesclass-protection-controller", []ruleSpec{
			grant(read...).in(core).on("persistentvolumeclaims"),
			grant(read...).in(core).on("persistentvolumes"),
			grant("get", "list", "watch", "update").in(storage).on("volumeattributesclasses"),
			recordEvents(),
		}},
		{"selinux-warning-controller", []ruleSpec{
			recordEvents(),
			grant(read...).in(core).on("persistentvolumes"),
			grant(read...).in(core).on("persistentvolumeclaims"),
			grant(read...).in(core).on("pods"),
			grant(read...).in(storage).on("csidrivers"),
		}},
	}
}

// apiControllers look after API machinery: credentials, certificates,
// aggregation, admission policies and storage migration.
func apiControllers() []controller {
	return []controller{
		{"service-account-controller", []ruleSpec{
			grant("create").in(core).on("serviceaccounts"),
			recordEvents(),
		}},
		{"legacy-service-account-token-cleaner", []ruleSpec{
			grant("get").in(core).on("configmaps").named("kube-apiserver-legacy-service-account-token-tracking"),
			grant("patch", "delete").in(core).on("secrets"),
		}},
		{"root-ca-cert-publisher", []ruleSpec{
			grant("create", "update").in(core).on("configmaps"),
			recordEvents(),
		}},
		{"certificate-controller", []ruleSpec{
			grant("get", "list", "watch", "delete").in(certificates).on("certificatesigningrequests"),
			grant("update").in(certificates).on("certificatesigningrequests/approval", "certificatesigningrequests/status"),
			// It approves nodes' serving certificates too (csrapproving),
			// which kube-controller-manager leaves to an operator.
			grant("approve").in(certificates).on("signers").named("kubernetes.io/kube-apiserver-client-kubelet",
				"kubernetes.io/kubelet-serving"),
			grant("sign").in(certificates).on("signers").named("kubernetes.io/kube-apiserver-client",
				"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown"),
			grant("create").in(authorization).on("subjectaccessreviews"),
			recordEvents(),
		}},
		{"podcertificaterequestcleaner", []ruleSpec{
			grant("get", "list", "watch", "delete").in(certificates).on("podcertificaterequests"),
		}},
		{"kube-apiserver-serving-clustertrustbundle-publisher", []ruleSpec{
			grant("attest").in(certificates).on("signers").named("kubernetes.io/kube-apiserver-serving"),
			grant("create", "update", "delete", "list", "watch").in(certificates).on("clustertrustbundles"),
			recordEvents(),
		}},
		{"clusterrole-aggregation-controller", []ruleSpec{
			grant("escalate", "get", "list", "watch", "update", "patch").in("rbac.authorization.k8s.io").on("clusterroles"),
		}},
		{"validatingadmissionpolicy-status-controller", []ruleSpec{
			grant(read...).in(admission).on("validatingadmissionpolicies"),
			grant("get", "patch", "update").in(admission).on("validatingadmissionpolicies/status"),
			recordEvents(),
		}},
		{"storage-version-migrator-controller", []ruleSpec{
			grant("list", "patch").in("*").on("*"),
			grant("get").in(apiextensions).on("customresourcedefinitions"),
			grant("patch").in(apiextensions).on("customresourcedefinitions/status"),
			grant("update").in(storageMigrate).on("storageversionmigrations/status"),
		}},
	}
}

// namespacedRoles are the roles kept in kube-system and kube-public: leader
// election for the components, the authentication config map for
// extension API servers, and bootstrap-token handling.
func namespacedRoles() []rbacv1.Role {
	leaderLocking := []ruleSpec{
		grant("create", "get", "list", "update", "watch").in(coordination).on("leases"),
		grant("create", "get", "list", "update", "watch").in(coordination).on("leasecandidates"),
	}
	return []rbacv1.Role{
		role(systemNamespace, "extension-apiserver-authentication-reader",
			grant(read...).in(core).on("configmaps").named("extension-apiserver-authentication")),
		role(systemNamespace, "system::leader-locking-kube-controller-manager", leaderLocking...),
		role(systemNamespace, "system::leader-locking-kube-scheduler", leaderLocking...),
		role(systemNamespace, controllerPrefix+"bootstrap-signer", grant(read...).in(core).on("secrets")),
		role(systemNamespace, controllerPrefix+"cloud-provider",
			grant("create", "get", "list", "watch").in(core).on("configmaps")),
		role(systemNamespace, controllerPrefix+"token-cleaner",
			grant("delete", "get", "list", "watch").in(core).on("secrets"),
			recordEvents(),
		),
		role(publicNamespace, controllerPrefix+"bootstrap-signer",
			grant(read...).in(core).on("configmaps"),
			grant("update").in(core).on("configmaps").named("cluster-info"),
			recordEvents(),
		),
	}
}

func namespacedRoleBindings() []rbacv1.RoleBinding {
	sa := func(name string) rbacv1.Subject { return serviceAccountSubject(systemNamespace, name) }
	return []rbacv1.RoleBinding{
		roleBinding(systemNamespace, "system::extension-apiserver-authentication-reader",
			"extension-apiserver-authentication-reader",
			userSubject(user.KubeControllerManager), userSubject(user.KubeScheduler)),
		roleBinding(systemNamespace, "system::leader-locking-kube-controller-manager",
			"system::leader-locking-kube-controller-manager",
			userSubject(user.KubeControllerManager), sa("kube-controller-manager"), sa("leader-election-controller")),
		roleBinding(systemNamespace, "system::leader-locking-kube-scheduler",
			"system::leader-locking-kube-scheduler", userSubject(user.KubeScheduler), sa("kube-scheduler")),
		roleBinding(systemNamespace, controllerPrefix+"bootstrap-signer",
			controllerPrefix+"bootstrap-signer", sa("bootstrap-signer")),
		roleBinding(systemNamespace, controllerPrefix+"cloud-provider",
			controllerPrefix+"cloud-provider", sa("cloud-provider")),
		roleBinding(systemNamespace, controllerPrefix+"token-cleaner",
			controllerPrefix+"token-cleaner", sa("token-cleaner")),
		roleBinding(publicNamespace, controllerPrefix+"bootstrap-signer",
			controllerPrefix+"bootstrap-signer", sa("bootstrap-signer")),
	}
}
