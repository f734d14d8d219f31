package proxy

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

func TestHealthz(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	h := newHealth(2*time.Hour, clk)
	code := func() int {
		rec := httptest.NewRecorder()
		h.serveHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		return rec.Code
	}
	if got := code(); got != http.StatusServiceUnavailable {
		t.Errorf("before the first sync: %d", got)
	}
	h.synced(clk.Now())
	if got := code(); got != http.StatusOK {
		t.Errorf("just synced: %d", got)
	}
	clk.Step(3 * time.Hour)
	if got := code(); got != http.StatusServiceUnavailable {
		t.Errorf("synced 3 h ago with a 1 h period: %d", got)
	}
}

// TestHealthCheckNodePorts serves the node ports on loopback ports of the
// test's choosing and checks what each answers as endpoints come and go.
func TestHealthCheckNodePorts(t *testing.T) {
	h := newHealth(time.Hour, clock.RealClock{})
	addrs := map[string]string{}
	h.listen = func(addr string) (net.Listener, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			addrs[addr] = l.Addr().String()
		}
		return l, err
	}
	defer h.close()
	sp := port("shop", "web", "", func(sp *servicePort) { sp.nodePort, sp.externalLocal, sp.healthCheckNodePort = 30080, true, 31000 })
	st := oneService(sp, ep("10.244.2.6"))
	h.setPorts(st)
	get := func() (int, map[string]any) {
		resp, err := http.Get("http://" + addrs[":31000"] + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	if code, body := get(); code != http.StatusServiceUnavailable || body["localEndpoints"] != 0.0 {
		t.Errorf("no local endpoint: %d %v", code, body)
	}
	st.endpoints[sp.name] = []endpoint{ep("10.244.1.5", onNode), ep("10.244.2.6")}
	h.setPorts(st)
	if code, body := get(); code != http.StatusOK || body["localEndpoints"] != 1.0 {
		t.Errorf("one local endpoint: %d %v", code, body)
	}
	h.setPorts(newState())
	if _, err := http.Get("http://" + addrs[":31000"] + "/"); err == nil {
		t.Error("the port of a deleted service still answers")
	}
}
