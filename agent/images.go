package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/cri"
)

// errBackingOff says a step waits out a back-off; the pod is synced again later.
var errBackingOff = errors.New("backing off")

// ensureImage makes the container's image present by its pull policy and
// returns its normalized reference. Failures are recorded as the container's
// waiting reason and as events, the way the kubelet reports them.
func (s *podSync) ensureImage(ctx context.Context, c *v1.Container) (string, error) {
	ref, pulled, err := s.imageFor(ctx, c)
	attrs := []attribute.KeyValue{attribute.String("container", c.Name), attribute.String("image", c.Image), attribute.Bool("pulled", pulled != nil)}
	if pulled != nil {
		attrs = append(attrs, attribute.Int64("bytes", pulled.Size))
	}
	s.a.pods.starts.step(s.pod.UID, "agent.image", err, attrs...)
	return ref, err
}

// imageFor returns the reference of the container's image, pulling it if
// it must be (then it returns the image pulled).
func (s *podSync) imageFor(ctx context.Context, c *v1.Container) (string, *cri.Image, error) {
	ref, err := cri.NormalizeImage(c.Image)
	if err != nil {
		return "", nil, s.fail(c.Name, "InvalidImageName", "InspectFailed", fmt.Sprintf("Failed to apply default image tag %q: %v", c.Image, err))
	}
	_, lookErr := s.a.rt.Image(ctx, ref)
	present := lookErr == nil
	if lookErr != nil && !errors.Is(lookErr, cri.ErrImageNotPresent) {
		return "", nil, lookErr
	}
	switch {
	case c.ImagePullPolicy == v1.PullNever && !present:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		return "", nil, s.fail(c.Name, "ErrImageNeverPull", "ErrImageNeverPull", msg)
	case present && c.ImagePullPolicy != v1.PullAlways:
		s.event(v1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", c.Image))
		return ref, nil, nil
	}
	img, err := s.pull(ctx, c, ref)
	return ref, img, err
}

func (s *podSync) pull(ctx context.Context, c *v1.Container, ref string) (*cri.Image, error) {
	key := string(s.pod.UID) + "/image/" + ref
	if s.a.pullBackoff.IsInBackOffSinceUpdate(key, s.a.clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		s.event(v1.EventTypeNormal, "BackOff", msg)
		s.setWaiting(c.Name, "ImagePullBackOff", msg)
		s.retryAfter(s.a.pullBackoff.Get(key))
		return nil, errBackingOff
	}
	s.event(v1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
	start := s.a.clock.Now()
	img, err := s.a.rt.Pull(ctx, ref, s.credentials(ctx))
	if err != nil {
		s.a.pullBackoff.Next(key, s.a.clock.Now())
		s.retryAfter(s.a.pullBackoff.Get(key))
		s.event(v1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %v", c.Image, err))
		return nil, s.fail(c.Name, "ErrImagePull", "Failed", err.Error())
	}
	took := s.a.clock.Since(start).Round(time.Millisecond)
	imagePullDuration.Observe(took.Seconds())
	s.event(v1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", c.Image, took, took, img.Size))
	s.a.pullBackoff.Reset(key)
	return &img, nil
}

// credentials reads the pod's imagePullSecrets (kubernetes.io/dockerconfigjson
// or dockercfg). A secret that is missing or unreadable is skipped, as the
// kubelet does: the pull may still work anonymously.
func (s *podSync) credentials(ctx context.Context) cri.Credentials {
	creds := cri.Credentials{}
	for _, ref := range s.pod.Spec.ImagePullSecrets {
		secret, err := s.a.objects.Secret(ctx, s.pod.Namespace, ref.Name)
		if err != nil {
			continue
		}
		for host, login := range parseDockerConfig(secret) {
			creds[host] = login
		}
	}
	return creds
}

type dockerAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// parseDockerConfig reads registry logins from a docker config secret. Hosts
// are keyed as the registry client asks for them (no scheme or path;
// Docker Hub's index name maps to its registry host).
func parseDockerConfig(secret *v1.Secret) cri.Credentials {
	auths := map[string]dockerAuth{}
	switch secret.Type {
	case v1.SecretTypeDockerConfigJson:
		var cfg struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		if json.Unmarshal(secret.Data[v1.DockerConfigJsonKey], &cfg) == nil {
			auths = cfg.Auths
		}
	case v1.SecretTypeDockercfg:
		_ = json.Unmarshal(secret.Data[v1.DockerConfigKey], &auths)
	}
	creds := cri.Credentials{}
	for server, a := range auths {
		if a.Auth != "" {
			if raw, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
				a.Username, a.Password, _ = strings.Cut(string(raw), ":")
			}
		}
		creds[registryHost(server)] = cri.Login{Username: a.Username, Password: a.Password}
	}
	return creds
}

func registryHost(server string) string {
	host := strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	host, _, _ = strings.Cut(host, "/")
	if host == "index.docker.io" || host == "docker.io" {
		return "registry-1.docker.io"
	}
	return host
}
