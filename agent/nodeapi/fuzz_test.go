package nodeapi

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"
)

// queryRequest is a GET of path with the raw query q, as the API server's
// proxy sends it; q need not be valid (url.ParseQuery skips what is not).
func queryRequest(path, q string) *http.Request {
	return &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path, RawQuery: q}, Header: http.Header{}}
}

// FuzzLogOptions feeds the containerLogs query parser any query. It must
// not panic, and what it accepts must hold the counts and time it was
// sent: a count that is not a valid number of its kind (tailLines may be
// 0, sinceSeconds and limitBytes may not) or a sinceTime that is not RFC
// 3339 must be refused, as must sinceTime with sinceSeconds.
func FuzzLogOptions(f *testing.F) {
	for _, q := range []string{
		"", "follow=true&timestamps=1", "tailLines=10&limitBytes=4096", "tailLines=0", "sinceSeconds=60&previous=true",
		"sinceTime=2024-05-01T10:00:00Z", "sinceTime=2024-05-01T10:00:00.5%2B02:00&follow=1",
		"sinceTime=2024-05-01T10:00:00Z&sinceSeconds=5", "tailLines=-1", "limitBytes=0", "sinceSeconds=0",
		"tailLines=9223372036854775808", "sinceTime=yesterday", "tailLines=1e3", "tailLines=%zz", "follow=yes&tailLines=+5",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		opts, err := logOptions(queryRequest("/containerLogs/ns/pod/c", q))
		if err != nil {
			return
		}
		query, _ := url.ParseQuery(q)
		for name, got := range map[string]*int64{"tailLines": opts.TailLines, "sinceSeconds": opts.SinceSeconds, "limitBytes": opts.LimitBytes} {
			checkCount(t, name, query.Get(name), got)
		}
		since := query.Get("sinceTime")
		if since == "" {
			if opts.SinceTime != nil {
				t.Errorf("%q: sinceTime %v without the parameter", q, opts.SinceTime)
			}
			return
		}
		if want, err := time.Parse(time.RFC3339, since); err != nil || opts.SinceTime == nil || !opts.SinceTime.Time.Equal(want) {
			t.Errorf("%q: sinceTime %v accepted from %q (%v)", q, opts.SinceTime, since, err)
		}
		if opts.SinceSeconds != nil {
			t.Errorf("%q: both sinceTime and sinceSeconds accepted", q)
		}
	})
}

// checkCount checks the count parameter name, sent as s, that logOptions
// accepted as got.
func checkCount(t *testing.T, name, s string, got *int64) {
	t.Helper()
	if s == "" {
		if got != nil {
			t.Errorf("%s = %d without the parameter", name, *got)
		}
		return
	}
	least := int64(1)
	if name == "tailLines" {
		least = 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < least || got == nil || *got != n {
		t.Errorf("%s: %q accepted as %v", name, s, got)
	}
}

// FuzzExecOptions feeds the exec query parser any query. It must not
// panic; what it accepts has a command (the "command" parameters, in
// order), at least one stream, and no stderr beside a tty.
func FuzzExecOptions(f *testing.F) {
	for _, q := range []string{
		"command=ls&command=-l&stdout=1&stderr=1", "command=sh&stdin=1&stdout=1&tty=1", "command=sh&stdin=1&stdout=1&stderr=1&tty=1",
		"command=date&stdout=true", "stdout=1", "command=ls", "command=&stderr=1", "command=a%20b&command=%3B&stdin=1",
		"command=x&stdin=01&stdout=%31", "command=%zz&stdout=1", "",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		opts, cmd, err := execOptions(queryRequest("/exec/ns/pod/c", q))
		if err != nil {
			return
		}
		query, _ := url.ParseQuery(q)
		if len(cmd) == 0 || !slices.Equal(cmd, query["command"]) {
			t.Errorf("%q: command %q", q, cmd)
		}
		if !opts.Stdin && !opts.Stdout && !opts.Stderr {
			t.Errorf("%q: accepted without a stream", q)
		}
		if opts.TTY && opts.Stderr {
			t.Errorf("%q: stderr beside a tty", q)
		}
	})
}
