package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/agent/downward"
	"github.com/skiff-lab/skiff/agent/envvars"
	"github.com/skiff-lab/skiff/agent/volumes"
	"github.com/skiff-lab/skiff/cri"
)

// errVolumeNotReady means a volume could not be set up for the first time;
// the pod waits (ContainerCreating) and the sync is retried.
var errVolumeNotReady = errors.New("volume not ready")

// The kubelet's names of the volume plugins, used for the volume dirs.
const (
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginProjected   = "kubernetes.io~projected"
)

// prepareVolumes sets up the pod's volumes on the node before its
// containers start, and refreshes them on every sync: memory-backed
// emptyDirs are mounted (tmpfs), hostPaths checked (and created for the
// *OrCreate types), claims' volumes found (claims.go), image volumes pulled and mounted read-only, and
// configMap, secret, downwardAPI and projected volumes (re)written
// atomically, so a changed object reaches running containers.
// A volume that fails for the first time is a FailedMount event and
// errVolumeNotReady; one that fails after it was set up keeps its content
// and gets a warning event.
func (s *podSync) prepareVolumes(ctx context.Context) error {
	var notReady []string
	for i := range s.pod.Spec.Volumes {
		vol := &s.pod.Spec.Volumes[i]
		err := s.prepareVolume(ctx, vol)
		if err == nil {
			continue
		}
		s.event(v1.EventTypeWarning, "FailedMount", fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", vol.Name, err))
		if !s.volumeReady(vol) {
			notReady = append(notReady, vol.Name)
		}
	}
	if len(notReady) > 0 {
		return fmt.Errorf("%w: %s", errVolumeNotReady, strings.Join(notReady, ", "))
	}
	return nil
}

func (s *podSync) prepareVolume(ctx context.Context, vol *v1.Volume) error {
	switch {
	case vol.EmptyDir != nil:
		_, err := s.emptyDir(vol)
		return err
	case vol.HostPath != nil:
		return volumes.CheckHostPath(vol.HostPath.Path, vol.HostPath.Type)
	case vol.Image != nil:
		return s.imageVolume(ctx, vol)
	case vol.PersistentVolumeClaim != nil, vol.Ephemeral != nil:
		_, err := s.claimVolume(ctx, vol)
		return err
	}
	plugin, ok := projectedPlugin(vol)
	if !ok {
		return fmt.Errorf("volume type not supported")
	}
	files, err := volumes.Payload(ctx, s.pod, vol, s.a.objects, s.fields())
	if err != nil {
		return err
	}
	dir, err := s.a.rt.VolumeDir(string(s.pod.UID), plugin, vol.Name)
	if err != nil {
		return err
	}
	var opts []volumes.WriteOption
	if sc := s.pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		opts = append(opts, volumes.WithFSGroup(*sc.FSGroup))
	}
	_, err = volumes.WriteAtomic(dir, files, opts...)
	return err
}

// projectedPlugin names the plugin of a volume whose files the agent writes.
func projectedPlugin(vol *v1.Volume) (string, bool) {
	switch {
	case vol.ConfigMap != nil:
		return pluginConfigMap, true
	case vol.Secret != nil:
		return pluginSecret, true
	case vol.DownwardAPI != nil:
		return pluginDownwardAPI, true
	case vol.Projected != nil:
		return pluginProjected, true
	}
	return "", false
}

// volumeReady says a volume was set up before: written volumes have their
// ..data link, image volumes are mounted, claims' volumes were found;
// other kinds have nothing to keep.
func (s *podSync) volumeReady(vol *v1.Volume) bool {
	if vol.Image != nil {
		return s.imageVolumeReady(vol)
	}
	if _, ok := s.a.claims.Load(claimKey{s.pod.UID, vol.Name}); ok {
		return true
	}
	plugin, ok := projectedPlugin(vol)
	if !ok {
		return false
	}
	dir, err := s.a.rt.VolumeDir(string(s.pod.UID), plugin, vol.Name)
	if err != nil {
		return false
	}
	_, err = os.Lstat(filepath.Join(dir, "..data"))
	return err == nil
}

// emptyDir creates the pod's emptyDir volume: a directory on the data dir's
// disk, or a tmpfs for medium Memory (sizeLimit as its size). With an
// fsGroup the directory belongs to that group, setgid, as the kubelet does.
func (s *podSync) emptyDir(vol *v1.Volume) (string, error) {
	dir, err := s.a.rt.EmptyDir(string(s.pod.UID), vol.Name)
	if err != nil {
		return "", err
	}
	if vol.EmptyDir.Medium == v1.StorageMediumMemory {
		if err := volumes.MountTmpfs(dir, vol.EmptyDir.SizeLimit); err != nil {
			return "", err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return "", err
		}
	}
	if sc := s.pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		if err := os.Chown(dir, -1, int(*sc.FSGroup)); err != nil {
			return "", err
		}
		return dir, os.Chmod(dir, 0o777|os.ModeSetgid)
	}
	return dir, nil
}

// volumeSource is the host path that backs a volume for a mount, and
// whether the kubelet always mounts it read-only (API data volumes).
func (s *podSync) volumeSource(vol *v1.Volume) (string, bool, error) {
	switch {
	case vol.EmptyDir != nil:
		dir, err := s.emptyDir(vol)
		return dir, false, err
	case vol.HostPath != nil:
		return vol.HostPath.Path, false, nil
	case vol.Image != nil:
		dir, err := s.a.rt.VolumeDir(string(s.pod.UID), pluginImage, vol.Name)
		return dir, true, err
	case vol.PersistentVolumeClaim != nil, vol.Ephemeral != nil:
		path, ok := s.a.claims.Load(claimKey{s.pod.UID, vol.Name})
		if !ok {
			return "", false, fmt.Errorf("volume %q: its claim is not bound yet", vol.Name)
		}
		return path.(string), vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ReadOnly, nil
	}
	plugin, ok := projectedPlugin(vol)
	if !ok {
		return "", false, fmt.Errorf("volume %q: type not supported", vol.Name)
	}
	dir, err := s.a.rt.VolumeDir(string(s.pod.UID), plugin, vol.Name)
	return dir, true, err
}

// resolvConf is the pod's /etc/resolv.conf (podDNSConfig), from the node's
// own resolver config and cluster DNS. A ClusterFirst pod on a node without
// cluster DNS gets the node's config and a MissingClusterDNS event, as
// from the kubelet.
func (s *podSync) resolvConf() []byte {
	host, _ := os.ReadFile(s.a.cfg.ResolvConf)
	c, missing := podDNSConfig(s.pod, parseResolvConf(host), clusterDNS{server: s.a.cfg.ClusterDNS, domain: s.a.cfg.ClusterDomain})
	if missing {
		s.event(v1.EventTypeWarning, "MissingClusterDNS",
			"pod: "+s.pod.Namespace+"/"+s.pod.Name+". kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy.")
	}
	return c.render()
}

// mounts are the pod's /etc/hosts, /etc/hostname and /etc/resolv.conf
// (each unless the container mounts a volume there, as the kubelet and
// containerd's CRI leave them), the container's volume mounts, with
// subPath (and subPathExpr, expanded with env) resolved inside the
// volume, and the attempt's termination log.
func (s *podSync) mounts(c *v1.Container, attempt int, podIPs, env []string) ([]cri.Mount, error) {
	var mounts []cri.Mount
	for _, f := range []struct {
		name, dest string
		data       func() []byte
	}{
		{"etc-hosts", "/etc/hosts", func() []byte { return hostsFile(s.pod, podIPs) }},
		{"hostname", "/etc/hostname", func() []byte { return []byte(podHostname(s.pod) + "\n") }},
		{"resolv.conf", "/etc/resolv.conf", s.resolvConf},
	} {
		if mountsAt(c, f.dest) {
			continue
		}
		path, err := s.a.rt.WritePodFile(string(s.pod.UID), f.name, f.data())
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, cri.Mount{Source: path, Destination: f.dest})
	}
	for _, vm := range c.VolumeMounts {
		m, err := s.volumeMount(vm, env)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, m)
	}
	if m, ok, err := s.terminationLog(c, attempt); err != nil || ok {
		return append(mounts, m), err
	}
	return mounts, nil
}

// mountsAt says whether c mounts a volume at path.
func mountsAt(c *v1.Container, path string) bool {
	for _, vm := range c.VolumeMounts {
		if filepath.Clean(vm.MountPath) == path {
			return true
		}
	}
	return false
}

func (s *podSync) volumeMount(vm v1.VolumeMount, env []string) (cri.Mount, error) {
	var vol *v1.Volume
	for i := range s.pod.Spec.Volumes {
		if s.pod.Spec.Volumes[i].Name == vm.Name {
			vol = &s.pod.Spec.Volumes[i]
		}
	}
	if vol == nil {
		return cri.Mount{}, fmt.Errorf("volume %q not found", vm.Name)
	}
	src, apiData, err := s.volumeSource(vol)
	if err != nil {
		return cri.Mount{}, err
	}
	sub := vm.SubPath
	if vm.SubPathExpr != "" {
		sub = envvars.ExpandCommand([]string{vm.SubPathExpr}, env)[0]
	}
	if sub != "" {
		if src, err = volumes.ResolveSubPath(src, sub); err != nil {
			return cri.Mount{}, err
		}
	}
	return cri.Mount{Source: src, Destination: vm.MountPath, ReadOnly: vm.ReadOnly || apiData,
		Propagation: propagation(vm.MountPropagation)}, nil
}

// propagation maps a mount's propagation mode to the OCI option.
func propagation(mode *v1.MountPropagationMode) string {
	if mode == nil {
		return ""
	}
	switch *mode {
	case v1.MountPropagationHostToContainer:
		return "rslave"
	case v1.MountPropagationBidirectional:
		return "rshared"
	}
	return ""
}

// podFields answers the Downward API's questions about one pod for its
// volumes (package downward does the work).
type podFields struct {
	pod         *v1.Pod
	ips         downward.IPs
	allocatable v1.ResourceList
}

func (s *podSync) fields() podFields {
	return podFields{pod: s.pod, ips: s.downwardIPs(nil), allocatable: s.a.node.Allocatable()}
}

func (f podFields) Field(fieldPath string) (string, error) {
	return downward.FieldValue(f.pod, fieldPath, f.ips)
}

func (f podFields) Resource(container string, sel *v1.ResourceFieldSelector) (string, error) {
	return downward.ResourceValue(f.pod, container, sel, f.allocatable)
}
