package redact

import (
	"regexp"
	"strings"
)

// A credential passed where a name or a number was expected (the key
// itself given to --api-key-env, a token pasted as an argument) must never
// come back in an error, a stored configuration or a report.

// keyPrefixes start the API keys and tokens of common providers.
var keyPrefixes = []string{"sk-", "sk_", "hf_", "gsk_", "xai-", "nvapi-", "r8_", "pplx-", "ghp_", "github_pat_", "glpat-", "AKIA", "Bearer "}

// secretToken finds credential-looking words inside a longer message.
var secretToken = regexp.MustCompile(`(?:sk|hf|gsk|xai|nvapi|r8|pplx|ghp|github_pat|glpat)[-_][A-Za-z0-9_\-]{6,}|AKIA[A-Z0-9]{12,}|Bearer [A-Za-z0-9._\-]{8,}`)

// envName is what an environment variable name looks like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// EnvName reports whether s has the form of an environment variable name.
func EnvName(s string) bool { return envName.MatchString(s) }

// LooksLikeSecret reports whether s may be a credential: a known key
// prefix, or a long random-looking word (letters and digits mixed, no
// spaces), as keys are and names and numbers are not.
func LooksLikeSecret(s string) bool {
	for _, p := range keyPrefixes {
		if strings.HasPrefix(s, p) && len(s) > len(p)+4 {
			return true
		}
	}
	if len(s) < 24 || strings.ContainsAny(s, " /\\.:") {
		return false
	}
	var lower, upper, digit bool
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	// Keys mix cases and digits; names are one case, or carry characters
	// (such as '-') no variable name has.
	return digit && ((lower && upper) || !envName.MatchString(s))
}

// Hidden stands in for a value that looks like a credential.
const Hidden = "(a value that looks like a credential, not shown)"

// Quoted is s as it may be printed: quoted, or Hidden when it looks like a
// credential.
func Quoted(s string) string {
	if LooksLikeSecret(s) {
		return Hidden
	}
	return `"` + s + `"`
}

// Secrets masks credential-looking words in a message, and escapes its
// control characters but newlines and tabs (an error may quote a server's
// body or a file's line); every error knee prints passes through it.
func Secrets(msg string) string {
	if hasControl(msg, true) {
		var b strings.Builder
		appendEscaped(&b, msg, true)
		msg = b.String()
	}
	return secretToken.ReplaceAllStringFunc(msg, func(m string) string {
		if i := strings.IndexAny(m, "-_ "); i >= 0 && i < 12 {
			return m[:i+1] + "…(redacted)"
		}
		return "…(redacted)"
	})
}
