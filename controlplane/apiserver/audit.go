package apiserver

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Audit is where and how much the server records of each request
// (kube-apiserver's --audit-policy-file and log backend).
type Audit struct {
	Policy  audit.PolicyRuleEvaluator
	Backend audit.Backend
}

// maxAuditedBody bounds the request and response bodies an event holds.
const maxAuditedBody = 1 << 20

// audit records each request as one audit.k8s.io/v1 Event at the level
// its policy rule gives (stage ResponseComplete, or ResponseStarted for a
// watch or an upgraded stream): Metadata — who, what, from where, the
// response code; Request — and the decoded request object; RequestResponse
// — and the object written back (both as JSON, whatever the client
// spoke). Secrets and tokens are never recorded beyond Metadata.
func (s *Server) audit(next http.Handler) http.Handler {
	if s.cfg.Audit == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, ok := s.auditEvent(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), auditEventKey{}, ev))
		next.ServeHTTP(rec, r)
		s.finishAudit(ev, rec)
	})
}

// auditEventKey holds, in a request's context, its audit event, for the
// handlers to add the objects they decode and write.
type auditEventKey struct{}

// auditRequestObject records the request's decoded object, as JSON, at
// level Request and above.
func auditRequestObject(r *http.Request, obj runtime.Object, gvk schema.GroupVersionKind) {
	if ev, ok := r.Context().Value(auditEventKey{}).(*auditinternal.Event); ok && ev.Level.GreaterOrEqual(auditinternal.LevelRequest) {
		ev.RequestObject = auditJSON(obj, gvk)
	}
}

// auditResponseObject records the object a request wrote back: its name
// completes the reference (a create's is not in its URL), the object
// itself goes in at level RequestResponse.
func auditResponseObject(r *http.Request, obj runtime.Object, gvk schema.GroupVersionKind) {
	ev, ok := r.Context().Value(auditEventKey{}).(*auditinternal.Event)
	if !ok {
		return
	}
	if ref := ev.ObjectRef; ref != nil {
		if m := registry.ObjectMeta(obj); m != nil && (ref.Name == "" || ref.Name == m.Name) {
			ref.Name, ref.UID, ref.ResourceVersion = m.Name, m.UID, m.ResourceVersion
		}
	}
	if ev.Level.GreaterOrEqual(auditinternal.LevelRequestResponse) {
		ev.ResponseObject = auditJSON(obj, gvk)
	}
}

// auditJSON is obj as JSON, with its kind.
func auditJSON(obj runtime.Object, gvk schema.GroupVersionKind) *runtime.Unknown {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	raw, err := json.Marshal(obj)
	if err != nil || len(raw) > maxAuditedBody {
		return nil
	}
	return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

// auditEvent starts the event of r, unless its level is None.
func (s *Server) auditEvent(r *http.Request) (*auditinternal.Event, bool) {
	u, ok := UserFrom(r.Context())
	if !ok {
		u = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	}
	attrs, err := s.attributes(r, u)
	if err != nil {
		attrs.ResourceRequest = false
	}
	cfg := s.cfg.Audit.Policy.EvaluatePolicyRule(attrs)
	if cfg.Level == auditinternal.LevelNone {
		return nil, false
	}
	ev := &auditinternal.Event{
		Level: cfg.Level, AuditID: types.UID(uuid.NewString()), Stage: auditinternal.StageResponseComplete,
		RequestURI: r.URL.RequestURI(), Verb: attrs.Verb, User: userInfo(u),
		SourceIPs: sourceIPs(r), UserAgent: r.UserAgent(),
		RequestReceivedTimestamp: metav1.NewMicroTime(time.Now()),
	}
	if name := r.Header.Get(authenticationv1.ImpersonateUserHeader); name != "" {
		ev.ImpersonatedUser = &authenticationv1.UserInfo{Username: name, Groups: r.Header.Values(authenticationv1.ImpersonateGroupHeader)}
	}
	if attrs.ResourceRequest {
		ev.ObjectRef = &auditinternal.ObjectReference{Resource: attrs.Resource, Namespace: attrs.Namespace, Name: attrs.Name,
			APIGroup: attrs.APIGroup, APIVersion: attrs.APIVersion, Subresource: attrs.Subresource}
		if secret(attrs) && ev.Level.GreaterOrEqual(auditinternal.LevelRequest) {
			ev.Level = auditinternal.LevelMetadata
		}
	}
	return ev, true
}

// secret says whether a request carries secret data: Secrets, service
// account tokens, token reviews.
func secret(attrs authorizer.AttributesRecord) bool {
	switch {
	case attrs.APIGroup == "" && attrs.Resource == "secrets",
		attrs.APIGroup == "" && attrs.Resource == "serviceaccounts" && attrs.Subresource == "token",
		attrs.APIGroup == authenticationv1.GroupName:
		return true
	}
	return false
}

// finishAudit completes the event with the response and writes it.
func (s *Server) finishAudit(ev *auditinternal.Event, rec *statusRecorder) {
	code := rec.code
	if code == 0 {
		code = http.StatusOK
	}
	if code == http.StatusSwitchingProtocols || ev.Verb == "watch" {
		ev.Stage = auditinternal.StageResponseStarted
	}
	ev.ResponseStatus = &metav1.Status{Code: int32(code)}
	ev.StageTimestamp = metav1.NewMicroTime(time.Now())
	s.cfg.Audit.Backend.ProcessEvents(ev)
}

func userInfo(u user.Info) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	if extra := u.GetExtra(); len(extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range extra {
			info.Extra[k] = v
		}
	}
	return info
}

func sourceIPs(r *http.Request) []string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return []string{host}
}
