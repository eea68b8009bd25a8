package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:PASSWORD@host:8000/v1":        "http://host:8000/v1",
		"https://host/v1?api_key=PASSWORD":         "https://host/v1",
		"http://host:8000":                         "http://host:8000",
		"http://us%er:PASS WORD@host/v1":           "http://host/v1", // does not parse
		"http://a@b:PASSWORD@host/v1/chat":         "http://host/v1/chat",
		"":                                         "",
		"http://[::1]:8000/v1":                     "http://[::1]:8000/v1",
		"http://user:p%40ss@host/tokenize?x=PASSW": "http://host/tokenize",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		`Post "http://user:PASSWORD@host/v1/chat/completions": EOF`: `Post "http://host/v1/chat/completions": EOF`,
		"the server's /tokenize (https://u:p@h:1/tokenize)":         "the server's /tokenize (https://h:1/tokenize)",
		"mail me at a@b.c":                     "mail me at a@b.c",
		"two: http://a:b@x/ and http://c:d@y/": "two: http://x/ and http://y/",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}
