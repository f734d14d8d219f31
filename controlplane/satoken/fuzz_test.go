package satoken

import (
	"crypto/rand"
	"crypto/rsa"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzVerify feeds Verify anything, starting from tokens it issued and
// mangled ones: it must not panic, and whatever it accepts must carry the
// claims of a token it issued (a signature over other claims never
// verifies).
func FuzzVerify(f *testing.F) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		f.Fatal(err)
	}
	iss, err := New(DefaultIssuer, key, nil)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	issued := map[string]Kubernetes{}
	for _, k := range []Kubernetes{
		{Namespace: "default", ServiceAccount: Ref{"default", "uid-1"}},
		{Namespace: "ns", ServiceAccount: Ref{"robot", "uid-2"}, Pod: &Ref{"p", "uid-3"}, Node: &Ref{"n", "uid-4"}},
	} {
		tok, err := iss.Issue(k, nil, now, time.Hour)
		if err != nil {
			f.Fatal(err)
		}
		issued[tok] = k
		f.Add(tok)
		head, _, _ := strings.Cut(tok, ".")
		f.Add(head + ".e30.")
		f.Add(tok + "x")
	}
	f.Add("")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMuY2x1c3Rlci5sb2NhbCJ9.")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := iss.Verify(token, now)
		if err != nil {
			return
		}
		for _, k := range issued {
			if reflect.DeepEqual(c.Kubernetes, k) {
				return
			}
		}
		t.Errorf("accepted %q with claims %+v, which it never issued", token, c.Kubernetes)
	})
}
