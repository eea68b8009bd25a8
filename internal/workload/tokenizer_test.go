package workload

import (
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// tokenizerSamples covers the pattern branches: contractions in both cases,
// digits runs, punctuation with trailing newlines, whitespace runs before
// words and at the end, CamelCase, accents and combining marks, CJK,
// emoji, and invalid-looking sequences.
var tokenizerSamples = []string{
	"",
	"Hello, world!",
	"The quick brown fox jumps over the lazy dog.",
	"I'm sure they'll say we've done what you'd do; IT'S DONE, He'D, she'LL",
	"1234567890 12 123 1234 3.14159 1e10 0x1F",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n\n\n",
	"   leading spaces and trailing   ",
	"tabs\tand\t\tmixed \t \n \r\n whitespace\n\n  \n",
	"CamelCaseWords HTTPServer getURLPath XMLHttpRequest iPhone",
	"naïve café résumé Ångström e\u0301 a\u0308b\u0327",
	"日本語のテキスト、中文文本，한국어 텍스트",
	"emoji 😀🎉👍🏽 and ZWJ 👨‍👩‍👧",
	"path/to/file.go // comment /* block */ a//b",
	"!!!??? ... --- === +++ ***\n\n***",
	"ǅungla ǈ ʰʲ ˢ ǀǁ ΑΒΓ αβγ Ω",
	"'s 't 're 've 'm 'll 'd 'x '",
	"\u00a0non-breaking\u00a0space\u2003em\u3000ideographic",
	"x\r\ny\rz\n\rw",
	"١٢٣٤ ٥ ⅣⅫ ½¾ ²³",
	"Ελληνικά Русский текст עברית العربية हिन्दी",
	strings.Repeat("ab ", 200) + strings.Repeat("=", 300),
}

var (
	refOnce sync.Once
	refErr  error
	refEnc  = map[string]*tiktoken.Tiktoken{}
)

// reference returns tiktoken-go's encoder (offline loader), the oracle.
func reference(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	refOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
		for _, n := range builtinEncodings {
			e, err := tiktoken.GetEncoding(n)
			if err != nil {
				refErr = err
				return
			}
			refEnc[n] = e
		}
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return refEnc[name]
}

func TestBuiltinMatchesTiktokenGo(t *testing.T) {
	for _, name := range builtinEncodings {
		tk, err := LoadTokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		ref := reference(t, name)
		for _, s := range tokenizerSamples {
			got, want := tk.Encode(s), ref.EncodeOrdinary(s)
			if !slices.Equal(got, want) {
				t.Errorf("%s Encode(%q)\n got %v\nwant %v", name, s, got, want)
			}
			if tk.Count(s) != len(want) {
				t.Errorf("%s Count(%q) = %d, want %d", name, s, tk.Count(s), len(want))
			}
			if dec := tk.Decode(got); dec != s {
				t.Errorf("%s Decode(Encode(%q)) = %q", name, s, dec)
			}
		}
	}
}

func TestLoadTokenizerNames(t *testing.T) {
	d, err := LoadTokenizer("")
	if err != nil || d.Name() != DefaultTokenizer {
		t.Fatalf("default tokenizer: %v, %v", d, err)
	}
	again, _ := LoadTokenizer("cl100k_base")
	if again != d {
		t.Error("built-in encodings should be loaded once and shared")
	}
	if got := d.Encode("hello world"); !slices.Equal(got, []int{15339, 1917}) {
		t.Errorf("cl100k hello world = %v, want [15339 1917]", got)
	}
	if got := d.Decode([]int{100257}); got != "<|endoftext|>" {
		t.Errorf("decode of special id = %q", got)
	}
	_, err = LoadTokenizer("p99k_base")
	if err == nil || !strings.Contains(err.Error(), "p99k_base") || !strings.Contains(err.Error(), "cl100k_base, o200k_base") {
		t.Errorf("unknown tokenizer error = %v", err)
	}
}

// TestBuiltinOffline loads both encodings in a fresh process whose HTTP
// transport fails every request and whose tiktoken cache is empty: if any
// code path tried to download a rank file, loading would fail.
func TestBuiltinOffline(t *testing.T) {
	if os.Getenv("KNEE_WORKLOAD_OFFLINE_CHILD") == "1" {
		http.DefaultTransport = failTransport{}
		http.DefaultClient = &http.Client{Transport: failTransport{}}
		for _, n := range builtinEncodings {
			tk, err := LoadTokenizer(n)
			if err != nil {
				t.Fatalf("offline load of %s: %v", n, err)
			}
			if tk.Count("offline works") != 2 {
				t.Fatalf("%s: unexpected count", n)
			}
		}
		// The reference library too, with the offline loader set.
		_ = reference(t, "cl100k_base")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBuiltinOffline$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KNEE_WORKLOAD_OFFLINE_CHILD=1",
		"TIKTOKEN_CACHE_DIR="+t.TempDir(), "HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("offline child failed: %v\n%s", err, out)
	}
}

type failTransport struct{}

func (failTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	panic("network access attempted: " + r.URL.String())
}

func TestSplittersMatchRegexp(t *testing.T) {
	for _, pat := range []string{patCL100K, patO200K, patQwen2, patGPT2} {
		fast, _ := newSplitter(pat)
		slow := mustRegexpSplitter(t, pat)
		for _, s := range tokenizerSamples {
			if got, want := pieces(fast, s), pieces(slow, s); !slices.Equal(got, want) {
				t.Errorf("pattern %.30s… on %q:\n got %q\nwant %q", pat, s, got, want)
			}
		}
	}
}

func mustRegexpSplitter(t testing.TB, pat string) splitter {
	// Wrapping the pattern in a group defeats newSplitter's fast path.
	s, err := newSplitter("(?:" + pat + ")")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(regexpSplitter); !ok {
		t.Fatal("expected the regexp fallback")
	}
	return s
}

func pieces(sp splitter, s string) []string {
	var out []string
	sp.split(s, func(a, b int) { out = append(out, s[a:b]) })
	return out
}

func FuzzSplitters(f *testing.F) {
	for _, s := range tokenizerSamples {
		f.Add(s)
	}
	pats := []string{patCL100K, patO200K, patQwen2, patGPT2}
	var fast, slow []splitter
	for _, p := range pats {
		sp, _ := newSplitter(p)
		fast = append(fast, sp)
		slow = append(slow, mustRegexpSplitter(f, p))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for k := range pats {
			got := pieces(fast[k], s)
			if strings.Join(got, "") != s {
				t.Fatalf("pattern %d: pieces %q do not cover %q", k, got, s)
			}
			if !utf8.ValidString(s) {
				continue // regexp2 sees U+FFFD; the scanner sees the raw bytes
			}
			if want := pieces(slow[k], s); !slices.Equal(got, want) {
				t.Fatalf("pattern %d on %q:\n got %q\nwant %q", k, s, got, want)
			}
		}
	})
}
