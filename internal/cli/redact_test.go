package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchNeverShowsURLPassword: a --url with user:PASSWORD@ leaves the
// password out of every output of a bench: stdout, stderr, the --out files
// and the stored run rendered in every format.
func TestBenchNeverShowsURLPassword(t *testing.T) {
	srv, _ := tokenServer(t, true)
	t.Run("tokenize", func(t *testing.T) { benchShowsNoPassword(t, srv.URL) })
	// A server without /tokenize whose non-streaming probe fails: the
	// notes quoting their errors.
	plain, _ := tokenServer(t, false)
	probeFails := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"stream":true`) {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		plain.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(probeFails.Close)
	t.Run("probe fails", func(t *testing.T) { benchShowsNoPassword(t, probeFails.URL) })
}

func benchShowsNoPassword(t *testing.T, base string) {
	const secret = "PASSWORD-s3cr3t"
	url := strings.Replace(base, "http://", "http://user:"+secret+"@", 1) + "/v1"
	out := t.TempDir()
	env := benchEnv(t)
	code, stdout, stderr := kneeEnv(t, env, "bench", "--url", url, "--model", "m", "--requests", "6",
		"--concurrency", "2", "--input-tokens", "20", "--output-tokens", "2", "--seed", "1", "--quiet", "--out", out,
		"--metrics-url", url)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	outputs := map[string]string{"stdout": stdout, "stderr": stderr}
	files, _ := os.ReadDir(out)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(out, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		outputs[f.Name()] = string(b)
	}
	for _, format := range []string{"text", "md", "csv", "json", "html"} {
		_, so, se := kneeEnv(t, env, "report", "last", "--format", format)
		outputs["report --format "+format] = so + se
	}
	_, so, se := kneeEnv(t, env, "runs")
	outputs["runs"] = so + se
	_, so, se = kneeEnv(t, env, "records", "last")
	outputs["records"] = so + se
	if len(outputs) < 10 {
		t.Fatalf("only %d outputs to check", len(outputs))
	}
	for name, text := range outputs {
		if strings.Contains(text, secret) {
			i := strings.Index(text, secret)
			t.Errorf("%s shows the URL's password: …%s…", name, text[max(0, i-120):min(len(text), i+40)])
		}
	}
}
