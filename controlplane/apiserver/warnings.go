package apiserver

import (
	"net/http"
	"slices"
	"sync"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/warning"
)

// headerWarnings sends the warnings a request's handling records (an
// admission plugin's, through k8s.io/apiserver's warning package) as
// kube-apiserver does: one `Warning: 299 - "<text>"` header each, once,
// which kubectl prints. Warnings recorded after the response has started
// are lost.
type headerWarnings struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	sent []string
}

// withWarnings gives r a warning recorder writing to w.
func withWarnings(w http.ResponseWriter, r *http.Request) *http.Request {
	return r.WithContext(warning.WithWarningRecorder(r.Context(), &headerWarnings{w: w}))
}

func (h *headerWarnings) AddWarning(agent, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if text == "" || slices.Contains(h.sent, text) {
		return
	}
	header, err := utilnet.NewWarningHeader(299, agent, text)
	if err != nil {
		return
	}
	h.sent = append(h.sent, text)
	h.w.Header().Add("Warning", header)
}

var _ warning.Recorder = (*headerWarnings)(nil)
