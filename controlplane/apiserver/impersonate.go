package apiserver

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// impersonate acts on the Impersonate-User, -Group, -Uid and -Extra-<key>
// headers as kube-apiserver does (kubectl --as, --as-group, --as-uid):
// the requester must be allowed the verb impersonate on each part asked
// for — users (or, for a service account's name, serviceaccounts in its
// namespace), groups, uids and userextras/<key> of authentication.k8s.io —
// and the request then goes on as that user, the headers removed. A refusal
// is written here (false).
func (s *Server) impersonate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	wanted, checks, err := impersonation(r.Header)
	if err != nil {
		writeError(w, apierrors.NewBadRequest(err.Error()))
		return r, false
	}
	if wanted == nil {
		return r, true
	}
	requester, ok := UserFrom(r.Context())
	if !ok {
		writeError(w, apierrors.NewUnauthorized("Unauthorized"))
		return r, false
	}
	for _, attrs := range checks {
		attrs.User = requester
		allowed, reason, err := s.decide(r.Context(), attrs)
		if errors.Is(err, errAuthorizerStarting) {
			w.Header().Set("Retry-After", "1")
			writeError(w, apierrors.NewServiceUnavailable(err.Error()))
			return r, false
		}
		if !allowed {
			writeError(w, forbidden(attrs, reason))
			return r, false
		}
	}
	for key := range r.Header {
		if strings.HasPrefix(key, "Impersonate-") {
			r.Header.Del(key)
		}
	}
	return r.WithContext(genericrequest.WithUser(r.Context(), wanted)), true
}

// impersonation reads the impersonation headers: the user they ask to act
// as (nil when none) and the checks that must pass.
func impersonation(h http.Header) (*user.DefaultInfo, []authorizer.AttributesRecord, error) {
	name := h.Get(authenticationv1.ImpersonateUserHeader)
	groups := h.Values(authenticationv1.ImpersonateGroupHeader)
	uid := h.Get(authenticationv1.ImpersonateUIDHeader)
	extra := map[string][]string{}
	for key, values := range h {
		if rest, ok := strings.CutPrefix(key, authenticationv1.ImpersonateUserExtraHeaderPrefix); ok {
			k, err := url.PathUnescape(rest)
			if err != nil {
				return nil, nil, fmt.Errorf("malformed impersonation extra key %q: %v", rest, err)
			}
			extra[strings.ToLower(k)] = values
		}
	}
	if name == "" {
		if len(groups) > 0 || uid != "" || len(extra) > 0 {
			return nil, nil, errors.New("requested impersonation of groups, a uid or extras without impersonating a user")
		}
		return nil, nil, nil
	}
	check := func(group, resource, sub, namespace, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{Verb: "impersonate", APIGroup: group, Resource: resource, Subresource: sub,
			Namespace: namespace, Name: name, ResourceRequest: true}
	}
	var checks []authorizer.AttributesRecord
	wanted := &user.DefaultInfo{Name: name, UID: uid, Groups: slices.Clone(groups)}
	if ns, sa, err := serviceaccount.SplitUsername(name); err == nil {
		checks = append(checks, check("", "serviceaccounts", "", ns, sa))
		if len(groups) == 0 {
			wanted.Groups = serviceaccount.MakeGroupNames(ns)
		}
	} else {
		checks = append(checks, check("", "users", "", "", name))
	}
	for _, g := range groups {
		checks = append(checks, check("", "groups", "", "", g))
	}
	if uid != "" {
		checks = append(checks, check(authenticationv1.GroupName, "uids", "", "", uid))
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		for _, v := range extra[k] {
			checks = append(checks, check(authenticationv1.GroupName, "userextras", k, "", v))
		}
	}
	if len(extra) > 0 {
		wanted.Extra = extra
	}
	everyone := user.AllAuthenticated
	if name == user.Anonymous {
		everyone = user.AllUnauthenticated
	}
	if !slices.Contains(wanted.Groups, everyone) {
		wanted.Groups = append(wanted.Groups, everyone)
	}
	return wanted, checks, nil
}
