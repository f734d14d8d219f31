package registry

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

// APIObjectResources are the kinds served as API objects for other
// components to act on (drivers, controllers, tools): skiff validates and
// stores them, and acts on some (RuntimeClasses at pod admission).
func APIObjectResources() []*Resource {
	storage := storagev1.SchemeGroupVersion
	networking := networkingv1.SchemeGroupVersion
	dra := resourcev1.SchemeGroupVersion
	flow := flowcontrolv1.SchemeGroupVersion
	return []*Resource{
		{GVK: corev1.SchemeGroupVersion.WithKind("PodTemplate"), Plural: "podtemplates", Singular: "podtemplate", Namespaced: true,
			NewObj: func() runtime.Object { return &corev1.PodTemplate{} }, NewList: func() runtime.Object { return &corev1.PodTemplateList{} },
			Strategy: podTemplateStrategy{}},
		{GVK: eventsv1.SchemeGroupVersion.WithKind("Event"), Plural: "events", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
			NewObj: func() runtime.Object { return &eventsv1.Event{} }, NewList: func() runtime.Object { return &eventsv1.EventList{} },
			Strategy: eventsV1Strategy{}},
		{GVK: nodev1.SchemeGroupVersion.WithKind("RuntimeClass"), Plural: "runtimeclasses", Singular: "runtimeclass",
			NewObj: func() runtime.Object { return &nodev1.RuntimeClass{} }, NewList: func() runtime.Object { return &nodev1.RuntimeClassList{} },
			Strategy: runtimeClassStrategy{}},
		{GVK: storage.WithKind("StorageClass"), Plural: "storageclasses", Singular: "storageclass", ShortNames: []string{"sc"},
			NewObj: func() runtime.Object { return &storagev1.StorageClass{} }, NewList: func() runtime.Object { return &storagev1.StorageClassList{} },
			Strategy: storageClassStrategy{}},
		{GVK: storage.WithKind("CSIDriver"), Plural: "csidrivers", Singular: "csidriver",
			NewObj: func() runtime.Object { return &storagev1.CSIDriver{} }, NewList: func() runtime.Object { return &storagev1.CSIDriverList{} },
			Strategy: csiDriverStrategy{}},
		{GVK: storage.WithKind("CSINode"), Plural: "csinodes", Singular: "csinode",
			NewObj: func() runtime.Object { return &storagev1.CSINode{} }, NewList: func() runtime.Object { return &storagev1.CSINodeList{} },
			Strategy: csiNodeStrategy{}},
		{GVK: storage.WithKind("CSIStorageCapacity"), Plural: "csistoragecapacities", Singular: "csistoragecapacity", Namespaced: true,
			NewObj:   func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
			NewList:  func() runtime.Object { return &storagev1.CSIStorageCapacityList{} },
			Strategy: csiStorageCapacityStrategy{}},
		{GVK: storage.WithKind("VolumeAttachment"), Plural: "volumeattachments", Singular: "volumeattachment",
			NewObj:   func() runtime.Object { return &storagev1.VolumeAttachment{} },
			NewList:  func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
			Strategy: volumeAttachmentStrategy{}, Subresources: []string{"status"}},
		{GVK: storage.WithKind("VolumeAttributesClass"), Plural: "volumeattributesclasses", Singular: "volumeattributesclass", ShortNames: []string{"vac"},
			NewObj:   func() runtime.Object { return &storagev1.VolumeAttributesClass{} },
			NewList:  func() runtime.Object { return &storagev1.VolumeAttributesClassList{} },
			Strategy: volumeAttributesClassStrategy{}},
		{GVK: networking.WithKind("IngressClass"), Plural: "ingressclasses", Singular: "ingressclass",
			NewObj: func() runtime.Object { return &networkingv1.IngressClass{} }, NewList: func() runtime.Object { return &networkingv1.IngressClassList{} },
			Strategy: ingressClassStrategy{}},
		{GVK: networking.WithKind("Ingress"), Plural: "ingresses", Singular: "ingress", Namespaced: true, ShortNames: []string{"ing"},
			NewObj: func() runtime.Object { return &networkingv1.Ingress{} }, NewList: func() runtime.Object { return &networkingv1.IngressList{} },
			Strategy: ingressStrategy{}, Subresources: []string{"status"}},
		{GVK: networking.WithKind("ServiceCIDR"), Plural: "servicecidrs", Singular: "servicecidr",
			NewObj: func() runtime.Object { return &networkingv1.ServiceCIDR{} }, NewList: func() runtime.Object { return &networkingv1.ServiceCIDRList{} },
			Strategy: serviceCIDRStrategy{}, Subresources: []string{"status"}},
		{GVK: networking.WithKind("IPAddress"), Plural: "ipaddresses", Singular: "ipaddress", ShortNames: []string{"ip"},
			NewObj: func() runtime.Object { return &networkingv1.IPAddress{} }, NewList: func() runtime.Object { return &networkingv1.IPAddressList{} },
			Strategy: ipAddressStrategy{}},
		{GVK: flow.WithKind("FlowSchema"), Plural: "flowschemas", Singular: "flowschema",
			NewObj: func() runtime.Object { return &flowcontrolv1.FlowSchema{} }, NewList: func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
			Strategy: flowSchemaStrategy{}, Subresources: []string{"status"}},
		{GVK: flow.WithKind("PriorityLevelConfiguration"), Plural: "prioritylevelconfigurations", Singular: "prioritylevelconfiguration",
			NewObj:   func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
			NewList:  func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
			Strategy: priorityLevelStrategy{}, Subresources: []string{"status"}},
		{GVK: dra.WithKind("DeviceClass"), Plural: "deviceclasses", Singular: "deviceclass",
			NewObj: func() runtime.Object { return &resourcev1.DeviceClass{} }, NewList: func() runtime.Object { return &resourcev1.DeviceClassList{} },
			Strategy: deviceClassStrategy{}},
		{GVK: dra.WithKind("DeviceTaintRule"), Plural: "devicetaintrules", Singular: "devicetaintrule",
			NewObj: func() runtime.Object { return &resourcev1.DeviceTaintRule{} }, NewList: func() runtime.Object { return &resourcev1.DeviceTaintRuleList{} },
			Strategy: deviceTaintRuleStrategy{}, Subresources: []string{"status"}},
		{GVK: dra.WithKind("ResourceClaim"), Plural: "resourceclaims", Singular: "resourceclaim", Namespaced: true,
			NewObj: func() runtime.Object { return &resourcev1.ResourceClaim{} }, NewList: func() runtime.Object { return &resourcev1.ResourceClaimList{} },
			Strategy: resourceClaimStrategy{}, Subresources: []string{"status"}},
		{GVK: dra.WithKind("ResourceClaimTemplate"), Plural: "resourceclaimtemplates", Singular: "resourceclaimtemplate", Namespaced: true,
			NewObj:   func() runtime.Object { return &resourcev1.ResourceClaimTemplate{} },
			NewList:  func() runtime.Object { return &resourcev1.ResourceClaimTemplateList{} },
			Strategy: resourceClaimTemplateStrategy{}},
		{GVK: dra.WithKind("ResourceSlice"), Plural: "resourceslices", Singular: "resourceslice",
			NewObj: func() runtime.Object { return &resourcev1.ResourceSlice{} }, NewList: func() runtime.Object { return &resourcev1.ResourceSliceList{} },
			Strategy: resourceSliceStrategy{}},
		{GVK: storagemigrationv1.SchemeGroupVersion.WithKind("StorageVersionMigration"), Plural: "storageversionmigrations", Singular: "storageversionmigration",
			NewObj:   func() runtime.Object { return &storagemigrationv1.StorageVersionMigration{} },
			NewList:  func() runtime.Object { return &storagemigrationv1.StorageVersionMigrationList{} },
			Strategy: storageMigrationStrategy{}, Subresources: []string{"status"}},
		{GVK: certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"), Plural: "clustertrustbundles", Singular: "clustertrustbundle",
			NewObj:   func() runtime.Object { return &certificatesv1.ClusterTrustBundle{} },
			NewList:  func() runtime.Object { return &certificatesv1.ClusterTrustBundleList{} },
			Strategy: clusterTrustBundleStrategy{}},
		{GVK: certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), Plural: "podcertificaterequests", Singular: "podcertificaterequest", Namespaced: true,
			NewObj:   func() runtime.Object { return &certificatesv1.PodCertificateRequest{} },
			NewList:  func() runtime.Object { return &certificatesv1.PodCertificateRequestList{} },
			Strategy: podCertificateRequestStrategy{}, Subresources: []string{"status"}},
	}
}
