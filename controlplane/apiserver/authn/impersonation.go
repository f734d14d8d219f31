package authn

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Impersonation reads the impersonation headers: the user they ask to act
// as (nil when none) and the checks that must pass.
func Impersonation(h http.Header) (*user.DefaultInfo, []authorizer.AttributesRecord, error) {
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
