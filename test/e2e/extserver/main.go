// Command extserver is what the e2e tests run in a pod to extend the API
// server from inside the cluster, over TLS with the certificate it is
// given: an admission webhook (/mutate labels what it admits
// mutated-by=extserver; /deny refuses objects named deny-*) and an
// extension API server of group wardle.example.com/v1alpha1 with one
// resource, flunders, whose list names the user the aggregator spoke for.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func main() {
	cert := flag.String("cert", "/ext/tls.crt", "serving certificate")
	key := flag.String("key", "/ext/tls.key", "its key")
	addr := flag.String("listen", ":8443", "address to serve on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", review(mutate))
	mux.HandleFunc("/deny", review(deny))
	mux.HandleFunc("/apis/wardle.example.com/v1alpha1", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "wardle.example.com/v1alpha1",
			APIResources: []metav1.APIResource{{Name: "flunders", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"list"}}}})
	})
	mux.HandleFunc("/apis/wardle.example.com/v1alpha1/namespaces/{ns}/flunders", func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-Remote-User")
		writeJSON(w, map[string]any{"apiVersion": "wardle.example.com/v1alpha1", "kind": "FlunderList", "metadata": map[string]any{},
			"items": []any{map[string]any{"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
				"metadata": map[string]any{"name": "for-" + user, "namespace": r.PathValue("ns")}}}})
	})
	log.Fatal(http.ListenAndServeTLS(*addr, *cert, *key, mux))
}

// review answers AdmissionReviews with decide's responses.
func review(decide func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var ar admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&ar); err != nil || ar.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		resp := decide(ar.Request)
		resp.UID = ar.Request.UID
		ar.Request, ar.Response = nil, resp
		writeJSON(w, ar)
	}
}

func mutate(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: err.Error()}}
	}
	patch := `[{"op":"add","path":"/metadata/labels/mutated-by","value":"extserver"}]`
	if obj.Labels == nil {
		patch = `[{"op":"add","path":"/metadata/labels","value":{"mutated-by":"extserver"}}]`
	}
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(patch)}
}

func deny(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if strings.HasPrefix(req.Name, "deny-") {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: req.Name + " is refused by extserver"}}
	}
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Print(err)
	}
}
