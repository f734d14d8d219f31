package registries

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// rule is one rewrite of repository names.
type rule struct {
	re   *regexp.Regexp
	with string
}

// compileRewrites orders the rules by their expressions, so that which
// one applies first does not depend on map order. They were checked by
// Load.
func compileRewrites(rewrites map[string]string) []rule {
	var out []rule
	for re, with := range rewrites {
		if c, err := regexp.Compile(re); err == nil {
			out = append(out, rule{c, with})
		}
	}
	slices.SortFunc(out, func(a, b rule) int { return strings.Compare(a.re.String(), b.re.String()) })
	return out
}

// rewriter changes the repository in the path of requests to a mirror
// ("<prefix><repository>/manifests/…", "/blobs/…", "/tags/…") by the
// first rule that matches it.
type rewriter struct {
	next   http.RoundTripper
	prefix string // the endpoint's path and "/v2/"
	rules  []rule
}

func (rw rewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	rest, ok := strings.CutPrefix(req.URL.Path, rw.prefix)
	if !ok {
		return rw.next.RoundTrip(req)
	}
	for _, kind := range []string{"/manifests/", "/blobs/", "/tags/"} {
		repo, tail, found := strings.Cut(rest, kind)
		if !found {
			continue
		}
		for _, r := range rw.rules {
			if r.re.MatchString(repo) {
				req = req.Clone(req.Context())
				req.URL.Path = rw.prefix + r.re.ReplaceAllString(repo, r.with) + kind + tail
				req.URL.RawPath = ""
				break
			}
		}
		break
	}
	return rw.next.RoundTrip(req)
}
