// Package redact takes credentials out of URLs before they are shown:
// printed, stored, or written into a report or a note. knee shows a URL in
// many places (targets, /tokenize and /metrics endpoints, probe errors);
// every one goes through URL, or Text for a message that may quote one.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// URL drops a URL's user info (user:password@) and its query string, which
// may hold a token. A string that does not parse as a URL is cut the same way
// by hand, so a malformed URL with a password is not shown either.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" {
		u.User = nil
		u.RawQuery, u.ForceQuery = "", false
		return u.String()
	}
	s := raw
	if i := strings.Index(s, "://"); i >= 0 {
		rest := s[i+3:]
		host, _, _ := strings.Cut(rest, "/")
		if at := strings.LastIndex(host, "@"); at >= 0 {
			s = s[:i+3] + rest[at+1:]
		}
	}
	if q := strings.IndexByte(s, '?'); q >= 0 {
		s = s[:q]
	}
	return s
}

// userInfo matches the user info of any URL inside free text.
var userInfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s"'<>]+@`)

// Text drops the user info of every URL quoted in s (an error message, a
// note), keeping the rest of the text as it is.
func Text(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userInfo.ReplaceAllString(s, "$1")
}

// Texts drops URL credentials from every message of texts, in place
// (notes and errors quote endpoints, and the URL given may carry a
// password), and returns texts.
func Texts(texts []string) []string {
	for i := range texts {
		texts[i] = Text(texts[i])
	}
	return texts
}
