package apiserver

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// objectInterfaces are what admission plugins may ask of the scheme.
var objectInterfaces = admission.NewObjectInterfacesFromScheme(codec.Scheme)

// SetAdmission installs the admission chain (Config.Admission) when it
// needs the server itself, as the authorizer policies ask; it is called
// before Serve.
func (s *Server) SetAdmission(chain admission.Interface) { s.cfg.Admission = chain }

// The admission chain (Config.Admission) runs in two phases, as in
// kube-apiserver: its mutating plugins may change a new or updated object
// before the strategy defaults and validates it; its validating plugins
// then see the object as it will be written and may refuse it. obj is the
// new object (nil for a delete), old the stored one (nil for a create); a
// refusal is the plugin's error, a Kubernetes Status.

// admitMutate runs the mutating phase on obj.
func (s *Server) admitMutate(ctx context.Context, op admission.Operation, req request, obj, old runtime.Object, dryRun bool) error {
	m, ok := s.cfg.Admission.(admission.MutationInterface)
	if !ok || !m.Handles(op) {
		return nil
	}
	return m.Admit(ctx, s.admissionAttributes(ctx, op, req, obj, old, nil, dryRun), objectInterfaces)
}

// admitValidate runs the validating phase on obj.
func (s *Server) admitValidate(ctx context.Context, op admission.Operation, req request, obj, old runtime.Object, dryRun bool) error {
	return s.validateAttributes(ctx, s.admissionAttributes(ctx, op, req, obj, old, nil, dryRun))
}

func (s *Server) validateAttributes(ctx context.Context, attrs admission.Attributes) error {
	v, ok := s.cfg.Admission.(admission.ValidationInterface)
	if !ok || !v.Handles(attrs.GetOperation()) {
		return nil
	}
	return v.Validate(ctx, attrs, objectInterfaces)
}

// admit runs both phases at once, for writes with nothing in between
// (deletes, token requests); opts are the request's options.
func (s *Server) admit(ctx context.Context, op admission.Operation, req request, obj, old, opts runtime.Object, dryRun bool) error {
	return s.admitAttributes(ctx, s.admissionAttributes(ctx, op, req, obj, old, opts, dryRun))
}

func (s *Server) admitAttributes(ctx context.Context, attrs admission.Attributes) error {
	op := attrs.GetOperation()
	if m, ok := s.cfg.Admission.(admission.MutationInterface); ok && m.Handles(op) {
		if err := m.Admit(ctx, attrs, objectInterfaces); err != nil {
			return err
		}
	}
	return s.validateAttributes(ctx, attrs)
}

// admitConnect admits a connection to a pod (exec, attach, port-forward)
// as kube-apiserver does: a CONNECT whose object is the request's options
// (a PodExecOptions, say), read from its query.
func (s *Server) admitConnect(ctx context.Context, req request, q url.Values) error {
	opts, err := connectOptions(req.subresource, q)
	if err != nil {
		return err
	}
	kinds, _, err := codec.Scheme.ObjectKinds(opts)
	if err != nil {
		return err
	}
	u, _ := UserFrom(ctx)
	attrs := admission.NewAttributesRecord(opts, nil, kinds[0], req.namespace, req.name,
		req.res.GVK.GroupVersion().WithResource(req.res.Plural), req.subresource, admission.Connect, nil, false, u)
	return s.admitAttributes(ctx, attrs)
}

// connectOptions reads the options of a connection to a pod from its query.
func connectOptions(subresource string, q url.Values) (runtime.Object, error) {
	switch subresource {
	case "exec":
		return &corev1.PodExecOptions{Stdin: isTrue(q.Get("stdin")), Stdout: isTrue(q.Get("stdout")), Stderr: isTrue(q.Get("stderr")),
			TTY: isTrue(q.Get("tty")), Container: q.Get("container"), Command: q["command"]}, nil
	case "attach":
		return &corev1.PodAttachOptions{Stdin: isTrue(q.Get("stdin")), Stdout: isTrue(q.Get("stdout")), Stderr: isTrue(q.Get("stderr")),
			TTY: isTrue(q.Get("tty")), Container: q.Get("container")}, nil
	}
	opts := &corev1.PodPortForwardOptions{}
	for _, p := range q["ports"] {
		port, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("ports: %q is not a port number", p))
		}
		opts.Ports = append(opts.Ports, int32(port))
	}
	return opts, nil
}

func (s *Server) admissionAttributes(ctx context.Context, op admission.Operation, req request, obj, old, opts runtime.Object, dryRun bool) admission.Attributes {
	u, _ := UserFrom(ctx)
	name := req.name
	if name == "" && obj != nil {
		name = registry.ObjectMeta(obj).Name
	}
	return admission.NewAttributesRecord(obj, old, req.res.GVK, req.namespace, name,
		req.res.GVK.GroupVersion().WithResource(req.res.Plural), req.subresource, op, opts, dryRun, u)
}
