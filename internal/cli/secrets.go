package cli

import "github.com/knee-dev/knee/internal/redact"

// Credentials given where a name or number was expected never come back in
// a message: internal/redact decides what looks like one.
var (
	looksLikeSecret = redact.LooksLikeSecret
	shown           = redact.Quoted
	redactSecrets   = redact.Secrets
)

// apiKeyFrom reads the API key from the environment variable named by
// --api-key-env ("" when none is named). A value that is not a variable
// name may be the key itself, given by mistake: it is never echoed.
func apiKeyFrom(env *Env, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if !redact.EnvName(name) || looksLikeSecret(name) {
		return "", Usagef("--api-key-env: want the NAME of an environment variable holding the key, such as OPENAI_API_KEY; the value given is not a variable name (not shown, in case it is the key itself)")
	}
	key := env.Getenv(name)
	if key == "" {
		return "", Usagef("--api-key-env %s: that environment variable is empty or unset", name)
	}
	return key, nil
}
