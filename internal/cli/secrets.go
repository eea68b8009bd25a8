package cli

import (
	"regexp"
	"strings"
)

// A credential passed where a name or a number was expected (the key
// itself given to --api-key-env, a token pasted as an argument) must never
// come back in an error, a stored configuration or a report.

// keyPrefixes start the API keys and tokens of common providers.
var keyPrefixes = []string{"sk-", "sk_", "hf_", "gsk_", "xai-", "nvapi-", "r8_", "pplx-", "ghp_", "github_pat_", "glpat-", "AKIA", "Bearer "}

// reSecretToken finds credential-looking words inside a longer message.
var reSecretToken = regexp.MustCompile(`(?:sk|hf|gsk|xai|nvapi|r8|pplx|ghp|github_pat|glpat)[-_][A-Za-z0-9_\-]{6,}|AKIA[A-Z0-9]{12,}|Bearer [A-Za-z0-9._\-]{8,}`)

// reEnvName is what an environment variable name looks like.
var reEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// looksLikeSecret reports whether s may be a credential: a known key
// prefix, or a long random-looking word (letters and digits mixed, no
// spaces), as keys are and names and numbers are not.
func looksLikeSecret(s string) bool {
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
	return digit && ((lower && upper) || !reEnvName.MatchString(s))
}

// shown is s as it may be printed: quoted, or a placeholder when it looks
// like a credential.
func shown(s string) string {
	if looksLikeSecret(s) {
		return "(a value that looks like a credential, not shown)"
	}
	return `"` + s + `"`
}

// redactSecrets masks credential-looking words in a message; every error
// knee prints passes through it.
func redactSecrets(msg string) string {
	return reSecretToken.ReplaceAllStringFunc(msg, func(m string) string {
		if i := strings.IndexAny(m, "-_ "); i >= 0 && i < 12 {
			return m[:i+1] + "…(redacted)"
		}
		return "…(redacted)"
	})
}

// apiKeyFrom reads the API key from the environment variable named by
// --api-key-env ("" when none is named). A value that is not a variable
// name may be the key itself, given by mistake: it is never echoed.
func apiKeyFrom(env *Env, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if !reEnvName.MatchString(name) || looksLikeSecret(name) {
		return "", Usagef("--api-key-env: want the NAME of an environment variable holding the key, such as OPENAI_API_KEY; the value given is not a variable name (not shown, in case it is the key itself)")
	}
	key := env.Getenv(name)
	if key == "" {
		return "", Usagef("--api-key-env %s: that environment variable is empty or unset", name)
	}
	return key, nil
}
