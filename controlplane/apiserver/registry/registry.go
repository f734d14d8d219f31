package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Resources is every resource the server serves.
func Resources(alloc *ServiceAllocator) []*Resource {
	core := corev1.SchemeGroupVersion
	apps := appsv1.SchemeGroupVersion
	rbac := rbacv1.SchemeGroupVersion
	all := []string{"all"}
	return []*Resource{
		{GVK: core.WithKind("Namespace"), Plural: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			NewObj: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
			Strategy: namespaceStrategy{}, Subresources: []string{"status", "finalize"}},
		{GVK: core.WithKind("Pod"), Plural: "pods", Singular: "pod", Namespaced: true, ShortNames: []string{"po"}, Categories: all,
			NewObj: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} },
			Strategy: PodStrategy{}, Subresources: []string{"status", "binding", "eviction", "log", "exec", "attach", "portforward", "proxy", "ephemeralcontainers", "resize"}},
		{GVK: core.WithKind("Node"), Plural: "nodes", Singular: "node", ShortNames: []string{"no"},
			NewObj: func() runtime.Object { return &corev1.Node{} }, NewList: func() runtime.Object { return &corev1.NodeList{} },
			Strategy: NodeStrategy{}, Subresources: []string{"status", "proxy"}},
		{GVK: core.WithKind("Service"), Plural: "services", Singular: "service", Namespaced: true, ShortNames: []string{"svc"}, Categories: all,
			NewObj: func() runtime.Object { return &corev1.Service{} }, NewList: func() runtime.Object { return &corev1.ServiceList{} },
			Strategy: ServiceStrategy{ServiceAllocator: alloc}, Subresources: []string{"status", "proxy"}},
		{GVK: core.WithKind("Endpoints"), Plural: "endpoints", Singular: "endpoints", Namespaced: true, ShortNames: []string{"ep"},
			NewObj: func() runtime.Object { return &corev1.Endpoints{} }, NewList: func() runtime.Object { return &corev1.EndpointsList{} },
			Strategy: EndpointsStrategy{}},
		{GVK: core.WithKind("Event"), Plural: "events", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
			NewObj: func() runtime.Object { return &corev1.Event{} }, NewList: func() runtime.Object { return &corev1.EventList{} },
			Strategy: EventStrategy{}},
		{GVK: core.WithKind("ConfigMap"), Plural: "configmaps", Singular: "configmap", Namespaced: true, ShortNames: []string{"cm"},
			NewObj: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
			Strategy: configMapStrategy{}},
		{GVK: core.WithKind("Secret"), Plural: "secrets", Singular: "secret", Namespaced: true,
			NewObj: func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} },
			Strategy: secretStrategy{}},
		{GVK: core.WithKind("ResourceQuota"), Plural: "resourcequotas", Singular: "resourcequota", Namespaced: true, ShortNames: []string{"quota"},
			NewObj: func() runtime.Object { return &corev1.ResourceQuota{} }, NewList: func() runtime.Object { return &corev1.ResourceQuotaList{} },
			Strategy: resourceQuotaStrategy{}, Subresources: []string{"status"}},
		{GVK: core.WithKind("LimitRange"), Plural: "limitranges", Singular: "limitrange", Namespaced: true, ShortNames: []string{"limits"},
			NewObj: func() runtime.Object { return &corev1.LimitRange{} }, NewList: func() runtime.Object { return &corev1.LimitRangeList{} },
			Strategy: limitRangeStrategy{}},
		{GVK: core.WithKind("ServiceAccount"), Plural: "serviceaccounts", Singular: "serviceaccount", Namespaced: true, ShortNames: []string{"sa"},
			NewObj: func() runtime.Object { return &corev1.ServiceAccount{} }, NewList: func() runtime.Object { return &corev1.ServiceAccountList{} },
			Strategy: serviceAccountStrategy{}, Subresources: []string{"token"}},
		{GVK: core.WithKind("ReplicationController"), Plural: "replicationcontrollers", Singular: "replicationcontroller", Namespaced: true,
			ShortNames: []string{"rc"}, Categories: all,
			NewObj:   func() runtime.Object { return &corev1.ReplicationController{} },
			NewList:  func() runtime.Object { return &corev1.ReplicationControllerList{} },
			Strategy: replicationControllerStrategy{}, Subresources: []string{"status", "scale"}},
		{GVK: apps.WithKind("ReplicaSet"), Plural: "replicasets", Singular: "replicaset", Namespaced: true, ShortNames: []string{"rs"}, Categories: all,
			NewObj: func() runtime.Object { return &appsv1.ReplicaSet{} }, NewList: func() runtime.Object { return &appsv1.ReplicaSetList{} },
			Strategy: replicaSetStrategy{}, Subresources: []string{"status", "scale"}},
		{GVK: apps.WithKind("Deployment"), Plural: "deployments", Singular: "deployment", Namespaced: true, ShortNames: []string{"deploy"}, Categories: all,
			NewObj: func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
			Strategy: deploymentStrategy{}, Subresources: []string{"status", "scale"}},
		{GVK: apps.WithKind("DaemonSet"), Plural: "daemonsets", Singular: "daemonset", Namespaced: true, ShortNames: []string{"ds"}, Categories: all,
			NewObj: func() runtime.Object { return &appsv1.DaemonSet{} }, NewList: func() runtime.Object { return &appsv1.DaemonSetList{} },
			Strategy: daemonSetStrategy{}, Subresources: []string{"status"}},
		{GVK: apps.WithKind("ControllerRevision"), Plural: "controllerrevisions", Singular: "controllerrevision", Namespaced: true,
			NewObj:   func() runtime.Object { return &appsv1.ControllerRevision{} },
			NewList:  func() runtime.Object { return &appsv1.ControllerRevisionList{} },
			Strategy: controllerRevisionStrategy{}},
		{GVK: batchv1.SchemeGroupVersion.WithKind("Job"), Plural: "jobs", Singular: "job", Namespaced: true, Categories: all,
			NewObj: func() runtime.Object { return &batchv1.Job{} }, NewList: func() runtime.Object { return &batchv1.JobList{} },
			Strategy: jobStrategy{}, Subresources: []string{"status"}},
		{GVK: batchv1.SchemeGroupVersion.WithKind("CronJob"), Plural: "cronjobs", Singular: "cronjob", Namespaced: true, ShortNames: []string{"cj"}, Categories: all,
			NewObj: func() runtime.Object { return &batchv1.CronJob{} }, NewList: func() runtime.Object { return &batchv1.CronJobList{} },
			Strategy: cronJobStrategy{}, Subresources: []string{"status"}},
		{GVK: policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), Plural: "poddisruptionbudgets", Singular: "poddisruptionbudget",
			Namespaced: true, ShortNames: []string{"pdb"},
			NewObj:   func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
			NewList:  func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
			Strategy: disruptionBudgetStrategy{}, Subresources: []string{"status"}},
		{GVK: autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), Plural: "horizontalpodautoscalers", Singular: "horizontalpodautoscaler",
			Namespaced: true, ShortNames: []string{"hpa"}, Categories: all,
			NewObj:   func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			NewList:  func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
			Strategy: autoscalerStrategy{}, Subresources: []string{"status"}},
		{GVK: autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), Plural: "horizontalpodautoscalers", Singular: "horizontalpodautoscaler",
			Namespaced: true, ShortNames: []string{"hpa"}, Categories: all,
			NewObj:   func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} },
			NewList:  func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} },
			Strategy: autoscalerV1Strategy{}, Subresources: []string{"status"}},
		{GVK: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Plural: "leases", Singular: "lease", Namespaced: true,
			NewObj: func() runtime.Object { return &coordinationv1.Lease{} }, NewList: func() runtime.Object { return &coordinationv1.LeaseList{} },
			Strategy: leaseStrategy{}},
		{GVK: certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), Plural: "certificatesigningrequests",
			Singular: "certificatesigningrequest", ShortNames: []string{"csr"},
			NewObj:   func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
			NewList:  func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
			Strategy: csrStrategy{}, Subresources: []string{"status", "approval"}},
		{GVK: discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), Plural: "endpointslices", Singular: "endpointslice", Namespaced: true,
			NewObj:   func() runtime.Object { return &discoveryv1.EndpointSlice{} },
			NewList:  func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
			Strategy: endpointSliceStrategy{}},
		{GVK: schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), Plural: "priorityclasses", Singular: "priorityclass", ShortNames: []string{"pc"},
			NewObj:   func() runtime.Object { return &schedulingv1.PriorityClass{} },
			NewList:  func() runtime.Object { return &schedulingv1.PriorityClassList{} },
			Strategy: priorityClassStrategy{}},
		{GVK: rbac.WithKind("Role"), Plural: "roles", Singular: "role", Namespaced: true,
			NewObj: func() runtime.Object { return &rbacv1.Role{} }, NewList: func() runtime.Object { return &rbacv1.RoleList{} },
			Strategy: roleStrategy{namespaced: true}},
		{GVK: rbac.WithKind("ClusterRole"), Plural: "clusterroles", Singular: "clusterrole",
			NewObj: func() runtime.Object { return &rbacv1.ClusterRole{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
			Strategy: roleStrategy{}},
		{GVK: rbac.WithKind("RoleBinding"), Plural: "rolebindings", Singular: "rolebinding", Namespaced: true,
			NewObj: func() runtime.Object { return &rbacv1.RoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
			Strategy: bindingStrategy{namespaced: true}},
		{GVK: rbac.WithKind("ClusterRoleBinding"), Plural: "clusterrolebindings", Singular: "clusterrolebinding",
			NewObj:   func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			NewList:  func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
			Strategy: bindingStrategy{}},
	}
}
