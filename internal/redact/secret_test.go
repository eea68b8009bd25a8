package redact

import (
	"strings"
	"testing"
)

func TestLooksLikeSecret(t *testing.T) {
	for s, want := range map[string]bool{
		"sk-abcdefghijklmnop":          true,
		"hf_AbCdEf123456":              true,
		"Bearer abcdefgh12345":         true,
		"aB3dE5gH7jK9mN1pQ3sT5vW7":     true,  // long, mixed case and digits
		"OPENAI_API_KEY":               false, // a variable name
		"max-num-batched-tokens":       false,
		"MY_VERY_LONG_VARIABLE_NAME_2": false, // one case: a name
		"sk-":                          false,
		"http://host:8000/v1/chat/x1":  false,
	} {
		if got := LooksLikeSecret(s); got != want {
			t.Errorf("LooksLikeSecret(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestQuotedAndSecrets(t *testing.T) {
	if got := Quoted("abc"); got != `"abc"` {
		t.Errorf("Quoted(abc) = %s", got)
	}
	if got := Quoted("sk-abcdefghijklmnop"); got != Hidden {
		t.Errorf("Quoted(key) = %s", got)
	}
	msg := Secrets("401 from server: key sk-proj-abcdefgh123 rejected; Bearer abcdefgh12345678 too")
	if strings.Contains(msg, "abcdefgh") || !strings.Contains(msg, "sk-…(redacted)") || !strings.Contains(msg, "Bearer …(redacted)") {
		t.Errorf("Secrets: %q", msg)
	}
	if !EnvName("OPENAI_API_KEY") || EnvName("sk-x y") {
		t.Error("EnvName")
	}
}
