package apiserver

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// apiObjectResources are the kinds served as API objects for other
// components to act on (drivers, controllers, tools): skiff validates and
// stores them, and acts on some (RuntimeClasses at pod admission).
func apiObjectResources() []*resource {
	storage := storagev1.SchemeGroupVersion
	networking := networkingv1.SchemeGroupVersion
	dra := resourcev1.SchemeGroupVersion
	flow := flowcontrolv1.SchemeGroupVersion
	return []*resource{
		{gvk: corev1.SchemeGroupVersion.WithKind("PodTemplate"), plural: "podtemplates", singular: "podtemplate", namespaced: true,
			newObj: func() runtime.Object { return &corev1.PodTemplate{} }, newList: func() runtime.Object { return &corev1.PodTemplateList{} },
			strategy: podTemplateStrategy{}},
		{gvk: eventsv1.SchemeGroupVersion.WithKind("Event"), plural: "events", singular: "event", namespaced: true, shortNames: []string{"ev"},
			newObj: func() runtime.Object { return &eventsv1.Event{} }, newList: func() runtime.Object { return &eventsv1.EventList{} },
			strategy: eventsV1Strategy{}},
		{gvk: nodev1.SchemeGroupVersion.WithKind("RuntimeClass"), plural: "runtimeclasses", singular: "runtimeclass",
			newObj: func() runtime.Object { return &nodev1.RuntimeClass{} }, newList: func() runtime.Object { return &nodev1.RuntimeClassList{} },
			strategy: runtimeClassStrategy{}},
		{gvk: storage.WithKind("StorageClass"), plural: "storageclasses", singular: "storageclass", shortNames: []string{"sc"},
			newObj: func() runtime.Object { return &storagev1.StorageClass{} }, newList: func() runtime.Object { return &storagev1.StorageClassList{} },
			strategy: storageClassStrategy{}},
		{gvk: storage.WithKind("CSIDriver"), plural: "csidrivers", singular: "csidriver",
			newObj: func() runtime.Object { return &storagev1.CSIDriver{} }, newList: func() runtime.Object { return &storagev1.CSIDriverList{} },
			strategy: csiDriverStrategy{}},
		{gvk: storage.WithKind("CSINode"), plural: "csinodes", singular: "csinode",
			newObj: func() runtime.Object { return &storagev1.CSINode{} }, newList: func() runtime.Object { return &storagev1.CSINodeList{} },
			strategy: csiNodeStrategy{}},
		{gvk: storage.WithKind("CSIStorageCapacity"), plural: "csistoragecapacities", singular: "csistoragecapacity", namespaced: true,
			newObj:   func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
			newList:  func() runtime.Object { return &storagev1.CSIStorageCapacityList{} },
			strategy: csiStorageCapacityStrategy{}},
		{gvk: storage.WithKind("VolumeAttachment"), plural: "volumeattachments", singular: "volumeattachment",
			newObj:   func() runtime.Object { return &storagev1.VolumeAttachment{} },
			newList:  func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
			strategy: volumeAttachmentStrategy{}, subresources: []string{"status"}},
		{gvk: storage.WithKind("VolumeAttributesClass"), plural: "volumeattributesclasses", singular: "volumeattributesclass", shortNames: []string{"vac"},
			newObj:   func() runtime.Object { return &storagev1.VolumeAttributesClass{} },
			newList:  func() runtime.Object { return &storagev1.VolumeAttributesClassList{} },
			strategy: volumeAttributesClassStrategy{}},
		{gvk: networking.WithKind("IngressClass"), plural: "ingressclasses", singular: "ingressclass",
			newObj: func() runtime.Object { return &networkingv1.IngressClass{} }, newList: func() runtime.Object { return &networkingv1.IngressClassList{} },
			strategy: ingressClassStrategy{}},
		{gvk: networking.WithKind("Ingress"), plural: "ingresses", singular: "ingress", namespaced: true, shortNames: []string{"ing"},
			newObj: func() runtime.Object { return &networkingv1.Ingress{} }, newList: func() runtime.Object { return &networkingv1.IngressList{} },
			strategy: ingressStrategy{}, subresources: []string{"status"}},
		{gvk: networking.WithKind("ServiceCIDR"), plural: "servicecidrs", singular: "servicecidr",
			newObj: func() runtime.Object { return &networkingv1.ServiceCIDR{} }, newList: func() runtime.Object { return &networkingv1.ServiceCIDRList{} },
			strategy: serviceCIDRStrategy{}, subresources: []string{"status"}},
		{gvk: networking.WithKind("IPAddress"), plural: "ipaddresses", singular: "ipaddress", shortNames: []string{"ip"},
			newObj: func() runtime.Object { return &networkingv1.IPAddress{} }, newList: func() runtime.Object { return &networkingv1.IPAddressList{} },
			strategy: ipAddressStrategy{}},
		{gvk: flow.WithKind("FlowSchema"), plural: "flowschemas", singular: "flowschema",
			newObj: func() runtime.Object { return &flowcontrolv1.FlowSchema{} }, newList: func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
			strategy: flowSchemaStrategy{}, subresources: []string{"status"}},
		{gvk: flow.WithKind("PriorityLevelConfiguration"), plural: "prioritylevelconfigurations", singular: "prioritylevelconfiguration",
			newObj:   func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
			newList:  func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
			strategy: priorityLevelStrategy{}, subresources: []string{"status"}},
		{gvk: dra.WithKind("DeviceClass"), plural: "deviceclasses", singular: "deviceclass",
			newObj: func() runtime.Object { return &resourcev1.DeviceClass{} }, newList: func() runtime.Object { return &resourcev1.DeviceClassList{} },
			strategy: deviceClassStrategy{}},
		{gvk: dra.WithKind("DeviceTaintRule"), plural: "devicetaintrules", singular: "devicetaintrule",
			newObj: func() runtime.Object { return &resourcev1.DeviceTaintRule{} }, newList: func() runtime.Object { return &resourcev1.DeviceTaintRuleList{} },
			strategy: deviceTaintRuleStrategy{}, subresources: []string{"status"}},
		{gvk: dra.WithKind("ResourceClaim"), plural: "resourceclaims", singular: "resourceclaim", namespaced: true,
			newObj: func() runtime.Object { return &resourcev1.ResourceClaim{} }, newList: func() runtime.Object { return &resourcev1.ResourceClaimList{} },
			strategy: resourceClaimStrategy{}, subresources: []string{"status"}},
		{gvk: dra.WithKind("ResourceClaimTemplate"), plural: "resourceclaimtemplates", singular: "resourceclaimtemplate", namespaced: true,
			newObj:   func() runtime.Object { return &resourcev1.ResourceClaimTemplate{} },
			newList:  func() runtime.Object { return &resourcev1.ResourceClaimTemplateList{} },
			strategy: resourceClaimTemplateStrategy{}},
		{gvk: dra.WithKind("ResourceSlice"), plural: "resourceslices", singular: "resourceslice",
			newObj: func() runtime.Object { return &resourcev1.ResourceSlice{} }, newList: func() runtime.Object { return &resourcev1.ResourceSliceList{} },
			strategy: resourceSliceStrategy{}},
		{gvk: storagemigrationv1.SchemeGroupVersion.WithKind("StorageVersionMigration"), plural: "storageversionmigrations", singular: "storageversionmigration",
			newObj:   func() runtime.Object { return &storagemigrationv1.StorageVersionMigration{} },
			newList:  func() runtime.Object { return &storagemigrationv1.StorageVersionMigrationList{} },
			strategy: storageMigrationStrategy{}, subresources: []string{"status"}},
		{gvk: certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"), plural: "clustertrustbundles", singular: "clustertrustbundle",
			newObj:   func() runtime.Object { return &certificatesv1.ClusterTrustBundle{} },
			newList:  func() runtime.Object { return &certificatesv1.ClusterTrustBundleList{} },
			strategy: clusterTrustBundleStrategy{}},
		{gvk: certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), plural: "podcertificaterequests", singular: "podcertificaterequest", namespaced: true,
			newObj:   func() runtime.Object { return &certificatesv1.PodCertificateRequest{} },
			newList:  func() runtime.Object { return &certificatesv1.PodCertificateRequestList{} },
			strategy: podCertificateRequestStrategy{}, subresources: []string{"status"}},
	}
}
