package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/satoken"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
)

var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// Token lifetimes, as kube-apiserver bounds them.
const (
	defaultTokenSeconds = 60 * 60
	minTokenSeconds     = 10 * 60
	maxTokenSeconds     = 1 << 32
)

// createToken answers a TokenRequest (serviceaccounts/<name>/token): a
// JWT for the service account, meant for the requested audiences (the API
// server's by default), bound, when asked, to a pod, secret or node of the
// namespace so that it dies with it.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request, req request) error {
	issuer := s.cfg.ServiceAccounts
	if issuer == nil {
		return errNotServed
	}
	tr := &authenticationv1.TokenRequest{}
	if err := decodeBody(w, r, tokenRequestGVK, tr); err != nil {
		return err
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = ptr.To(int64(defaultTokenSeconds))
	}
	if errs := validateTokenRequest(tr); len(errs) > 0 {
		return registry.Invalid(tokenRequestGVK.GroupKind(), req.name, errs)
	}
	ctx := r.Context()
	sa := &corev1.ServiceAccount{}
	if err := s.store.Get(ctx, req.res.Key(req.namespace, req.name), sa); err != nil {
		return codec.StoreError(err, req.res.GroupResource(), req.name)
	}
	claims := satoken.Kubernetes{Namespace: sa.Namespace, ServiceAccount: satoken.Ref{Name: sa.Name, UID: string(sa.UID)}}
	if err := s.bindToken(ctx, tr.Spec.BoundObjectRef, sa, &claims); err != nil {
		return err
	}
	dryRun, err := isDryRun(r)
	if err != nil {
		return err
	}
	if err := s.admit(ctx, admission.Create, req, tr, nil, nil, dryRun); err != nil {
		return err
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = issuer.Audiences()
	}
	start := time.Now()
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	token, err := issuer.Issue(claims, tr.Spec.Audiences, start, ttl)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	tr.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(start.Add(ttl))}
	writeObject(w, r, http.StatusCreated, tr, tokenRequestGVK)
	return nil
}

func validateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "expirationSeconds")
	switch secs := *tr.Spec.ExpirationSeconds; {
	case secs < minTokenSeconds:
		errs = append(errs, field.Invalid(p, secs, "may not specify a duration less than 10 minutes"))
	case secs > maxTokenSeconds:
		errs = append(errs, field.Invalid(p, secs, "may not specify a duration larger than 2^32 seconds"))
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		kinds := []string{"Pod", "Secret", "Node"}
		if !slices.Contains(kinds, ref.Kind) {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "boundObjectRef", "kind"), ref.Kind, kinds))
		}
		if ref.Name == "" {
			errs = append(errs, field.Required(field.NewPath("spec", "boundObjectRef", "name"), ""))
		}
	}
	return errs
}

// bindToken adds to claims the object ref binds the token to (a pod also
// binds it to the pod's node), which must exist with ref's UID, if given.
func (s *Server) bindToken(ctx context.Context, ref *authenticationv1.BoundObjectReference, sa *corev1.ServiceAccount, claims *satoken.Kubernetes) error {
	if ref == nil {
		return nil
	}
	obj, err := s.lookup(ctx, ref.Kind, sa.Namespace, ref.Name)
	if err != nil {
		return err
	}
	m := registry.ObjectMeta(obj)
	if ref.UID != "" && ref.UID != m.UID {
		return apierrors.NewConflict(s.resourceFor(boundPlural[ref.Kind]).GroupResource(), ref.Name, fmt.Errorf(
			"the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	bound := &satoken.Ref{Name: m.Name, UID: string(m.UID)}
	switch o := obj.(type) {
	case *corev1.Pod:
		if o.Spec.ServiceAccountName != sa.Name {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa.Name))
		}
		claims.Pod = bound
		if o.Spec.NodeName != "" {
			node, err := s.lookup(ctx, "Node", "", o.Spec.NodeName)
			if err == nil {
				claims.Node = &satoken.Ref{Name: o.Spec.NodeName, UID: string(registry.ObjectMeta(node).UID)}
			}
		}
	case *corev1.Secret:
		claims.Secret = bound
	case *corev1.Node:
		claims.Node = bound
	}
	return nil
}

// boundPlural is the resource of each kind a token may be bound to.
var boundPlural = map[string]string{"Pod": "pods", "Secret": "secrets", "Node": "nodes"}

// storedPlural is the resource of each kind a token names: its service
// account and the kinds it may be bound to.
var storedPlural = map[string]string{"ServiceAccount": "serviceaccounts", "Pod": "pods", "Secret": "secrets", "Node": "nodes"}

// lookup reads the object of kind (ServiceAccount, Pod, Secret, Node) a
// token names or is to be bound to; it is the authenticators' Lookup.
func (s *Server) lookup(ctx context.Context, kind, namespace, name string) (runtime.Object, error) {
	res := s.resourceFor(storedPlural[kind])
	if !res.Namespaced {
		namespace = ""
	}
	obj := res.NewObj()
	if err := s.store.Get(ctx, res.Key(namespace, name), obj); err != nil {
		return nil, codec.StoreError(err, res.GroupResource(), name)
	}
	return obj, nil
}

// serveOpenID answers the OpenID provider configuration or the key set
// (kube-apiserver's service account issuer discovery), cacheable for an
// hour.
func (s *Server) serveOpenID(w http.ResponseWriter, doc []byte, contentType string) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc)
}
