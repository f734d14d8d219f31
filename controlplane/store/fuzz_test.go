package store

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/validation/path"
)

// fuzzPrefix is the list the fuzzed tokens continue.
const fuzzPrefix = "/registry/clusterroles/"

func TestDecodeContinue(t *testing.T) {
	for _, tt := range []struct {
		start string
		ok    bool
	}{
		{"web\x00", true},
		{"ns/web-0\x00", true},
		{"system:a..b\x00", true}, // a ClusterRole may be named so; such pages could not be continued
		{"", true},
		{"../secrets/", false},
		{"ns/../../secrets/", false},
		{"./web", false},
		{"/registry/secrets/", false},
		{"ns//web", false},
	} {
		token := encodeContinue(fuzzPrefix+tt.start, fuzzPrefix, 3)
		key, rev, err := decodeContinue(token, fuzzPrefix)
		if tt.ok && (err != nil || key != fuzzPrefix+tt.start || rev != 3) {
			t.Errorf("start %q: %q at %d, %v", tt.start, key, rev, err)
		}
		if !tt.ok && !errors.Is(err, ErrBadContinue) {
			t.Errorf("start %q: %q, %v; want ErrBadContinue", tt.start, key, err)
		}
	}
}

// FuzzContinueToken feeds decodeContinue any token, and encodeContinue
// any object name. A token must decode to a key under the list's prefix
// at a revision of 0 (the latest) or more, or fail with ErrBadContinue;
// the token of a page that ends at any name an API object may have (the
// loosest rule, RBAC's path segment names) must decode to where that page
// ended, at its revision.
func FuzzContinueToken(f *testing.F) {
	f.Add(encodeContinue(fuzzPrefix+"admin\x00", fuzzPrefix, 42), "admin", int64(42))
	f.Add(encodeContinue(fuzzPrefix+"edit\x00", fuzzPrefix, inconsistentRevision), "system:a..b", int64(1))
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Nywic3RhcnQiOiIuLi9zZWNyZXRzLyJ9", "ns/web-0", int64(7)) // start "../secrets/"
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJhIn0", "x", int64(9223372036854775807))   // rv 0
	f.Add("eyJ2IjoidjEiLCJydiI6NSwic3RhcnQiOiJhIn0", "a", int64(5))                                     // wrong version
	f.Add("garbage", "", int64(0))
	f.Add("e30=", "%", int64(-5))
	f.Add("", ".", int64(1))
	f.Fuzz(func(t *testing.T, token, name string, rev int64) {
		key, got, err := decodeContinue(token, fuzzPrefix)
		switch {
		case err != nil && !errors.Is(err, ErrBadContinue):
			t.Errorf("token %q: %v, want ErrBadContinue", token, err)
		case err == nil && (!strings.HasPrefix(key, fuzzPrefix) || got < 0):
			t.Errorf("token %q: key %q at revision %d", token, key, got)
		}
		if rev <= 0 || !utf8.ValidString(name) || len(path.IsValidPathSegmentName(name)) > 0 {
			return // no page of a list is at such a revision or ends at such a name
		}
		end := fuzzPrefix + name + "\x00"
		key, got, err = decodeContinue(encodeContinue(end, fuzzPrefix, rev), fuzzPrefix)
		if err != nil || key != end || got != rev {
			t.Errorf("token of %q at %d: decodes to %q at %d, %v", end, rev, key, got, err)
		}
	})
}
