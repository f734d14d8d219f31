package apiserver

import (
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// resources is every resource the server serves.
func resources(alloc *serviceAllocator) []*resource {
	core := corev1.SchemeGroupVersion
	apps := appsv1.SchemeGroupVersion
	rbac := rbacv1.SchemeGroupVersion
	all := []string{"all"}
	return []*resource{
		{gvk: core.WithKind("Namespace"), plural: "namespaces", singular: "namespace", shortNames: []string{"ns"},
			newObj: func() runtime.Object { return &corev1.Namespace{} }, newList: func() runtime.Object { return &corev1.NamespaceList{} },
			strategy: namespaceStrategy{}, subresources: []string{"status", "finalize"}},
		{gvk: core.WithKind("Pod"), plural: "pods", singular: "pod", namespaced: true, shortNames: []string{"po"}, categories: all,
			newObj: func() runtime.Object { return &corev1.Pod{} }, newList: func() runtime.Object { return &corev1.PodList{} },
			strategy: podStrategy{}, subresources: []string{"status", "binding", "eviction", "log", "exec", "attach", "portforward", "proxy", "ephemeralcontainers", "resize"}},
		{gvk: core.WithKind("Node"), plural: "nodes", singular: "node", shortNames: []string{"no"},
			newObj: func() runtime.Object { return &corev1.Node{} }, newList: func() runtime.Object { return &corev1.NodeList{} },
			strategy: nodeStrategy{}, subresources: []string{"status", "proxy"}},
		{gvk: core.WithKind("Service"), plural: "services", singular: "service", namespaced: true, shortNames: []string{"svc"}, categories: all,
			newObj: func() runtime.Object { return &corev1.Service{} }, newList: func() runtime.Object { return &corev1.ServiceList{} },
			strategy: serviceStrategy{serviceAllocator: alloc}, subresources: []string{"status", "proxy"}},
		{gvk: core.WithKind("Endpoints"), plural: "endpoints", singular: "endpoints", namespaced: true, shortNames: []string{"ep"},
			newObj: func() runtime.Object { return &corev1.Endpoints{} }, newList: func() runtime.Object { return &corev1.EndpointsList{} },
			strategy: endpointsStrategy{}},
		{gvk: core.WithKind("Event"), plural: "events", singular: "event", namespaced: true, shortNames: []string{"ev"},
			newObj: func() runtime.Object { return &corev1.Event{} }, newList: func() runtime.Object { return &corev1.EventList{} },
			strategy: eventStrategy{}},
		{gvk: core.WithKind("ConfigMap"), plural: "configmaps", singular: "configmap", namespaced: true, shortNames: []string{"cm"},
			newObj: func() runtime.Object { return &corev1.ConfigMap{} }, newList: func() runtime.Object { return &corev1.ConfigMapList{} },
			strategy: configMapStrategy{}},
		{gvk: core.WithKind("Secret"), plural: "secrets", singular: "secret", namespaced: true,
			newObj: func() runtime.Object { return &corev1.Secret{} }, newList: func() runtime.Object { return &corev1.SecretList{} },
			strategy: secretStrategy{}},
		{gvk: core.WithKind("ResourceQuota"), plural: "resourcequotas", singular: "resourcequota", namespaced: true, shortNames: []string{"quota"},
			newObj: func() runtime.Object { return &corev1.ResourceQuota{} }, newList: func() runtime.Object { return &corev1.ResourceQuotaList{} },
			strategy: resourceQuotaStrategy{}, subresources: []string{"status"}},
		{gvk: core.WithKind("LimitRange"), plural: "limitranges", singular: "limitrange", namespaced: true, shortNames: []string{"limits"},
			newObj: func() runtime.Object { return &corev1.LimitRange{} }, newList: func() runtime.Object { return &corev1.LimitRangeList{} },
			strategy: limitRangeStrategy{}},
		{gvk: core.WithKind("ServiceAccount"), plural: "serviceaccounts", singular: "serviceaccount", namespaced: true, shortNames: []string{"sa"},
			newObj: func() runtime.Object { return &corev1.ServiceAccount{} }, newList: func() runtime.Object { return &corev1.ServiceAccountList{} },
			strategy: serviceAccountStrategy{}, subresources: []string{"token"}},
		{gvk: core.WithKind("ReplicationController"), plural: "replicationcontrollers", singular: "replicationcontroller", namespaced: true,
			shortNames: []string{"rc"}, categories: all,
			newObj:   func() runtime.Object { return &corev1.ReplicationController{} },
			newList:  func() runtime.Object { return &corev1.ReplicationControllerList{} },
			strategy: replicationControllerStrategy{}, subresources: []string{"status", "scale"}},
		{gvk: apps.WithKind("ReplicaSet"), plural: "replicasets", singular: "replicaset", namespaced: true, shortNames: []string{"rs"}, categories: all,
			newObj: func() runtime.Object { return &appsv1.ReplicaSet{} }, newList: func() runtime.Object { return &appsv1.ReplicaSetList{} },
			strategy: replicaSetStrategy{}, subresources: []string{"status", "scale"}},
		{gvk: apps.WithKind("Deployment"), plural: "deployments", singular: "deployment", namespaced: true, shortNames: []string{"deploy"}, categories: all,
			newObj: func() runtime.Object { return &appsv1.Deployment{} }, newList: func() runtime.Object { return &appsv1.DeploymentList{} },
			strategy: deploymentStrategy{}, subresources: []string{"status", "scale"}},
		{gvk: coordinationv1.SchemeGroupVersion.WithKind("Lease"), plural: "leases", singular: "lease", namespaced: true,
			newObj: func() runtime.Object { return &coordinationv1.Lease{} }, newList: func() runtime.Object { return &coordinationv1.LeaseList{} },
			strategy: leaseStrategy{}},
		{gvk: certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), plural: "certificatesigningrequests",
			singular: "certificatesigningrequest", shortNames: []string{"csr"},
			newObj:   func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
			newList:  func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
			strategy: csrStrategy{}, subresources: []string{"status", "approval"}},
		{gvk: discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), plural: "endpointslices", singular: "endpointslice", namespaced: true,
			newObj:   func() runtime.Object { return &discoveryv1.EndpointSlice{} },
			newList:  func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
			strategy: endpointSliceStrategy{}},
		{gvk: schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), plural: "priorityclasses", singular: "priorityclass", shortNames: []string{"pc"},
			newObj:   func() runtime.Object { return &schedulingv1.PriorityClass{} },
			newList:  func() runtime.Object { return &schedulingv1.PriorityClassList{} },
			strategy: priorityClassStrategy{}},
		{gvk: rbac.WithKind("Role"), plural: "roles", singular: "role", namespaced: true,
			newObj: func() runtime.Object { return &rbacv1.Role{} }, newList: func() runtime.Object { return &rbacv1.RoleList{} },
			strategy: roleStrategy{namespaced: true}},
		{gvk: rbac.WithKind("ClusterRole"), plural: "clusterroles", singular: "clusterrole",
			newObj: func() runtime.Object { return &rbacv1.ClusterRole{} }, newList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
			strategy: roleStrategy{}},
		{gvk: rbac.WithKind("RoleBinding"), plural: "rolebindings", singular: "rolebinding", namespaced: true,
			newObj: func() runtime.Object { return &rbacv1.RoleBinding{} }, newList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
			strategy: bindingStrategy{namespaced: true}},
		{gvk: rbac.WithKind("ClusterRoleBinding"), plural: "clusterrolebindings", singular: "clusterrolebinding",
			newObj:   func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			newList:  func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
			strategy: bindingStrategy{}},
	}
}
