package apiserver

import (
	"context"
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// AuthenticationInfoName is the ConfigMap in kube-system that tells
// extension API servers how to authenticate the requests they get.
const AuthenticationInfoName = "extension-apiserver-authentication"

// PublishAuthenticationInfo writes kube-system/extension-apiserver-
// authentication as kube-apiserver does: client certificates of clientCA
// are users; a client certificate of requestHeaderCA named one of
// allowedNames is the front proxy, speaking for the user in its
// X-Remote-User, X-Remote-Uid, X-Remote-Group and X-Remote-Extra-*
// headers. It creates the ConfigMap or brings its data up to date.
func (s *Server) PublishAuthenticationInfo(ctx context.Context, clientCA, requestHeaderCA []byte, allowedNames []string) error {
	list := func(v ...string) string { b, _ := json.Marshal(v); return string(b) }
	data := map[string]string{
		"client-ca-file":                     string(clientCA),
		"requestheader-client-ca-file":       string(requestHeaderCA),
		"requestheader-allowed-names":        list(allowedNames...),
		"requestheader-username-headers":     list("X-Remote-User"),
		"requestheader-uid-headers":          list("X-Remote-Uid"),
		"requestheader-group-headers":        list("X-Remote-Group"),
		"requestheader-extra-headers-prefix": list("X-Remote-Extra-"),
	}
	res := s.resourceFor("configmaps")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: AuthenticationInfoName, Namespace: metav1.NamespaceSystem}, Data: data}
	if err := s.createIfMissing(ctx, res, cm.DeepCopy()); err != nil {
		return err
	}
	return s.store.Update(ctx, res.Key(cm.Namespace, cm.Name), &corev1.ConfigMap{}, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.ConfigMap)
		c.Data = maps.Clone(data)
		return c, nil
	})
}
