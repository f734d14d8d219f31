package apiserver

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/podtrace"
)

// The journey page: static files embedded in the binary (no CDN, no build
// step), the journeys the server keeps, and each new step as a
// Server-Sent Event. The paths are non-resource URLs, authenticated and
// authorized as every other (RBAC: get on /ui and /ui/*).
const (
	uiPath         = "/ui"
	uiJourneysPath = "/ui/journeys"
	uiEventsPath   = "/ui/events"
)

// uiJourneys is how many journeys the page starts with.
const uiJourneys = 200

// uiKeepAlive is how often an idle event stream sends a comment, so that
// proxies in between do not close it.
const uiKeepAlive = 25 * time.Second

// uiBuffer is how many steps an event stream holds for a slow reader; past
// it, the stream ends and the page reconnects and reloads the journeys.
const uiBuffer = 512

//go:embed ui
var uiEmbedded embed.FS

var uiFiles = func() http.Handler {
	sub, err := fs.Sub(uiEmbedded, "ui")
	if err != nil {
		panic(err)
	}
	return http.StripPrefix(uiPath+"/", http.FileServerFS(sub))
}()

// isUIPath says p is the page or one of its paths.
func isUIPath(p string) bool { return p == uiPath || strings.HasPrefix(p, uiPath+"/") }

// serveUI answers the page's paths.
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	journeys := s.cfg.Journeys
	switch r.URL.Path {
	case uiPath:
		http.Redirect(w, r, uiPath+"/", http.StatusMovedPermanently)
	case uiJourneysPath:
		if journeys == nil {
			journeys = podtrace.NewStore(1)
		}
		n, err := journeysLimit(r.URL.Query().Get("limit"), journeys.Capacity())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		codec.WriteJSON(w, http.StatusOK, journeys.Recent(n))
	case uiEventsPath:
		s.serveUIEvents(w, r)
	default:
		uiFiles.ServeHTTP(w, r)
	}
}

// journeysLimit is how many journeys /ui/journeys?limit= asks for:
// uiJourneys by default, at most all the store holds.
func journeysLimit(v string, capacity int) (int, error) {
	if v == "" {
		return uiJourneys, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("limit: %q is not a positive number of journeys", v)
	}
	return min(n, capacity), nil
}

// uiEvent is one step of a pod's journey as the page receives it.
type uiEvent struct {
	UID       string        `json:"uid"`
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	TraceID   string        `json:"traceID,omitempty"`
	Step      podtrace.Step `json:"step"`
}

// serveUIEvents streams each step the store records, from now on, as a
// Server-Sent Event, until the client goes or falls uiBuffer steps behind.
func (s *Server) serveUIEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok || s.cfg.Journeys == nil {
		http.Error(w, "no journeys to stream", http.StatusServiceUnavailable)
		return
	}
	events := make(chan uiEvent, uiBuffer)
	overflow := make(chan struct{})
	cancel := s.cfg.Journeys.Subscribe(func(j podtrace.Journey, st podtrace.Step) {
		select {
		case events <- uiEvent{UID: j.UID, Namespace: j.Namespace, Name: j.Name, TraceID: j.TraceID, Step: st}:
		default:
			select {
			case <-overflow:
			default:
				close(overflow)
			}
		}
	})
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": journeys\n\n") // the page loads the journeys once it sees the stream open
	flusher.Flush()
	keepAlive := time.NewTicker(uiKeepAlive)
	defer keepAlive.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-overflow:
			return
		case <-keepAlive.C:
			_, err = fmt.Fprint(w, ": keep-alive\n\n")
		case e := <-events:
			err = writeEvent(w, e)
		}
		if err != nil {
			return
		}
		flusher.Flush()
	}
}

func writeEvent(w http.ResponseWriter, e uiEvent) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: step\ndata: %s\n\n", b)
	return err
}
