package cni

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// cacheEntry is a libcni cache file (cniCacheV1) of an ADD of sandbox p1
// that ran the conflist config and returned result.
func cacheEntry(t testing.TB, kind string, config []byte, result string) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"kind": kind, "containerId": "p1", "config": config, "ifName": ifName, "networkName": networkName,
		"cniArgs":        [][2]string{{"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "web"}},
		"capabilityArgs": map[string]any{"portMappings": []portMapEntry{{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"}}},
		"result":         json.RawMessage(result),
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// FuzzCachedAttachment reads any bytes as the libcni cache entry of a
// sandbox, as Setup's adoption and Teardown's DEL do after a restart: the
// cached conflist and runtime conf, then the cached result. Nothing may
// panic; an entry that is not JSON counts as none; whatever the entry
// says, DEL stays aimed at this sandbox's id, interface and namespace.
func FuzzCachedAttachment(f *testing.F) {
	conf, err := os.ReadFile(filepath.Join("testdata", "skiff.conflist.golden"))
	if err != nil {
		f.Fatal(err)
	}
	const result = `{"cniVersion":"1.0.0","interfaces":[{"name":"skiff0"},{"name":"veth1"},{"name":"eth0","sandbox":"/run/skiff/netns/p1"}],` +
		`"ips":[{"interface":2,"address":"10.244.1.5/24","gateway":"10.244.1.1"}],"routes":[{"dst":"0.0.0.0/0"}],"dns":{}}`
	valid := cacheEntry(f, "cniCacheV1", conf, result)
	for _, seed := range [][]byte{
		valid,
		cacheEntry(f, "cniCacheV1", conf, `{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.244.1.5/24"}]}`),
		cacheEntry(f, "cniCacheV1", conf, `{"cniVersion":"9.9.9","ips":[{"address":"not-an-ip"}]}`),
		cacheEntry(f, "cniCacheV1", conf, `{"ips":"none"}`),
		cacheEntry(f, "cniCacheV1", []byte(`{"cniVersion":"1.0.0","name":"../../x","plugins":[{"type":"bridge"}]}`), result),
		cacheEntry(f, "cniCacheV1", []byte("not a conflist"), result),
		cacheEntry(f, "cniCacheV2", conf, result),
		[]byte(result), // a result alone, as libcni before its cache format wrote
		valid[:len(valid)/2],
		[]byte("null"),
		{},
	} {
		f.Add(seed)
	}
	n, _ := newTestNetwork(f, "x")
	const id = "p1"
	rt := bareRuntimeConf(id, n.NetNSPath(id))
	path := filepath.Join(n.cfg.CacheDir, "results", networkName+"-"+id+"-"+ifName)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, entry []byte) {
		if err := os.WriteFile(path, entry, 0o600); err != nil {
			t.Fatal(err)
		}
		list, cachedRT := n.cachedAttachment(rt)
		if list == nil {
			return
		}
		if !json.Valid(entry) {
			t.Fatalf("entry %q that is not JSON read as %+v", entry, list)
		}
		if cachedRT.ContainerID != rt.ContainerID || cachedRT.IfName != rt.IfName || cachedRT.NetNS != rt.NetNS {
			t.Errorf("entry %q turns DEL to sandbox %q, interface %q, netns %q", entry, cachedRT.ContainerID, cachedRT.IfName, cachedRT.NetNS)
		}
		cached, err := n.cni.GetNetworkListCachedResult(list, cachedRT)
		if err != nil || cached == nil {
			return
		}
		_, _ = newResult(rt.NetNS, cached) // adopt's, and DEL's stand-in's, reading of it
	})
}
