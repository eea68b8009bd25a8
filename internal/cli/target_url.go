package cli

import (
	"net/url"
	"strings"
)

// checkBaseURL refuses a --url that names an endpoint rather than the
// server's base URL: knee appends /v1/chat/completions (or /v1/completions)
// itself, so http://h:8000/v1/chat/completions would be requested as
// .../v1/chat/completions/v1/chat/completions and every request would fail.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil // the endpoint builder names what is wrong with it
	}
	path := strings.TrimRight(u.Path, "/")
	for _, tail := range []string{"/chat/completions", "/completions", "/models", "/embeddings"} {
		if strings.HasSuffix(path, tail) {
			base := *u
			base.Path = strings.TrimSuffix(path, tail)
			base.RawQuery, base.Fragment, base.User = "", "", nil
			return Usagef("--url %s names the %s endpoint; give the server's base URL instead (%s): knee adds /v1%s itself (--api chat|completions picks the endpoint)",
				redactURL(raw), tail, base.String(), "/chat/completions or /v1/completions")
		}
	}
	return nil
}
