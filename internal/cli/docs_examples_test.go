package cli

// Every command in README.md and docs/*.md code blocks runs here, in the
// order the page gives them, against the embedded simulated server with
// small bounded loads, so an example that stops working fails CI.
//
// What the harness changes, and only that (boundExample):
//   - real-time loads are bounded: durations scaled by 1/durationScale
//     (every duration flag alike, --split and --window included, so a split
//     still falls inside the run it cuts), --requests capped, and knee's
//     own server stepping faster, and a --seed where none is given;
//     simulated runs (virtual time) keep their durations and have
//     --requests capped;
//   - a --url of a machine the docs name (localhost:8000, gpu-box) is a
//     simulated server on loopback, and the model sent is the one it serves;
//     a --gpu-metrics-url on such a machine is that server's /dcgm/metrics;
//   - knee serve and knee ui listen on a free loopback port, run until the
//     page's commands are done, and curl is sent to the last knee serve;
//   - run ids that the page's database does not hold are the newest runs;
//   - a bare file name the page reads but no earlier command wrote gets a
//     stand-in (a sweep CSV, simulated records, a vLLM result, a preset
//     file); a path in a folder (results/records.jsonl) never does, so an
//     earlier command must have written it.
//
// A synopsis line (knee report RUN [--format …]) cannot run; its flags must
// exist in the command's -h.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
	"github.com/knee-dev/knee/internal/store"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// durationScale shrinks every duration of a real-time example.
const durationScale = 75

const (
	maxRealtimeRequests = 8
	maxSimRequests      = 3000
	maxRealtimeDuration = time.Second
)

// docCommand is one command of a page: where it is and its words.
type docCommand struct {
	file string
	line int
	text string
	args []string
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.line, c.text) }

var fenceRE = regexp.MustCompile("^\\s*```\\s*([A-Za-z0-9_-]*)")

// dataLangs are code blocks that hold no commands.
var dataLangs = map[string]bool{"json": true, "yaml": true, "yml": true, "csv": true, "text": true, "go": true, "jsonl": true, "tsv": true}

// extractCommands returns the commands of a Markdown file's code blocks:
// lines starting with knee, go run ./cmd/knee or curl (a leading "$ " is
// allowed), backslash continuations joined, trailing # comments removed.
func extractCommands(t *testing.T, path, name string) []docCommand {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []docCommand
	inBlock, skip := false, false
	for i := 0; i < len(lines); i++ {
		if m := fenceRE.FindStringSubmatch(lines[i]); m != nil {
			if !inBlock {
				inBlock, skip = true, dataLangs[strings.ToLower(m[1])]
			} else {
				inBlock = false
			}
			continue
		}
		if !inBlock || skip {
			continue
		}
		start := i
		text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "$ "))
		for strings.HasSuffix(text, "\\") && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, "\\") + " " + strings.TrimSpace(lines[i])
		}
		words, err := shellWords(text)
		if err != nil {
			t.Errorf("%s:%d: %v: %s", name, start+1, err, text)
			continue
		}
		switch {
		case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/knee":
			words = append([]string{"knee"}, words[3:]...)
		case len(words) > 0 && (words[0] == "knee" || words[0] == "curl"):
		default:
			continue
		}
		out = append(out, docCommand{file: name, line: start + 1, text: text, args: words})
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for the quoting
// docs use ('…', "…", \x), stopping at a # that starts a word.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed double quote")
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, nil
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var placeholderRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// isSynopsis: a usage line ([optional] parts, a|b choices, RUN or FILE
// placeholders) rather than a command. A placeholder model name beside a
// --url the harness replaces (--model M) is not one: the harness sends the
// stand-in's model.
func isSynopsis(args []string) bool {
	_, hasURL := flagValue(args, "url")
	for i, a := range args[1:] {
		prev := args[i]
		if strings.HasPrefix(a, "[") || strings.HasPrefix(a, "(") {
			return true
		}
		if placeholderRE.MatchString(a) && !(hasURL && (prev == "--model" || prev == "--served-model")) {
			return true
		}
	}
	return false
}

var envRE = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// expandEnv replaces $NAME and ${NAME} from the environment, as the shell
// would; it names the first variable that is unset (such a command needs
// what the page set up first, e.g. a real server CI starts).
func expandEnv(args []string) ([]string, string) {
	out := make([]string, len(args))
	unset := ""
	for i, a := range args {
		out[i] = envRE.ReplaceAllStringFunc(a, func(m string) string {
			name := envRE.FindStringSubmatch(m)[1]
			v, ok := os.LookupEnv(name)
			if !ok && unset == "" {
				unset = name
			}
			return v
		})
	}
	return out, unset
}

// subcommand is the command's name as knee dispatches it ("sim sweep" for
// the simulated sweep).
func subcommand(args []string) string {
	if len(args) < 2 {
		return ""
	}
	if args[1] == "sim" && len(args) > 2 && args[2] == "sweep" {
		return "sim sweep"
	}
	return args[1]
}

// flagValue returns the value of --name (as "--name v" or "--name=v").
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--"+name || a == "-"+name {
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// mapFlag rewrites the value of every --name with f.
func mapFlag(args []string, name string, f func(string) string) []string {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		if (out[i] == "--"+name || out[i] == "-"+name) && i+1 < len(out) {
			out[i+1] = f(out[i+1])
			i++
		} else if v, ok := strings.CutPrefix(out[i], "--"+name+"="); ok {
			out[i] = "--" + name + "=" + f(v)
		}
	}
	return out
}

func withDefault(args []string, name, value string) []string {
	if _, ok := flagValue(args, name); ok {
		return args
	}
	return append(args, "--"+name, value)
}

func dropFlag(args []string, name string) []string {
	var out []string
	for _, a := range args {
		if a != "--"+name {
			out = append(out, a)
		}
	}
	return out
}

func scaleDuration(v string) string {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return v // a count (--warmup 20) or an empty end of a span
	}
	d = min(max(d/durationScale, 50*time.Millisecond), maxRealtimeDuration)
	return d.String()
}

func scaleSpan(v string) string {
	a, b, ok := strings.Cut(v, ":")
	if !ok {
		return scaleDuration(v)
	}
	return scaleDuration(a) + ":" + scaleDuration(b)
}

func capCount(limit int) func(string) string {
	return func(v string) string {
		if n, err := strconv.Atoi(v); err == nil && n > limit {
			return strconv.Itoa(limit)
		}
		return v
	}
}

// docsHarness is what one page's commands share.
type docsHarness struct {
	t        *testing.T
	dir      string
	repo     string // the repository root (the pages name its files: internal/ingest/testdata/…)
	env      map[string]string
	standIn  string // base URL of the loopback stand-in for a real server
	model    string // the model it serves
	lastServ string // base URL of the last knee serve the page started
	bg       []*background
}

// realTarget: a URL the docs use for a server the reader runs.
var realTarget = regexp.MustCompile(`^https?://(localhost|127\.0\.0\.1|gpu-box|[a-z0-9-]+\.example)(:\d+)?`)

// boundExample is the command as the harness runs it (see the file comment).
func (h *docsHarness) boundExample(c docCommand) []string {
	// "..." stands for more flags; a glob is expanded as the shell would.
	var args []string
	for _, a := range c.args[1:] {
		switch {
		case a == "...":
		case strings.ContainsAny(a, "*?["):
			if m, _ := filepath.Glob(filepath.Join(h.dir, a)); len(m) > 0 {
				for _, p := range m {
					rel, _ := filepath.Rel(h.dir, p)
					args = append(args, rel)
				}
				continue
			}
			args = append(args, a)
		default:
			args = append(args, a)
		}
	}
	name := subcommand(c.args)
	if u, ok := flagValue(args, "url"); ok && realTarget.MatchString(u) {
		args = mapFlag(args, "url", func(string) string { return h.standIn })
		args = mapFlag(args, "model", func(string) string { return h.model })
		args = mapFlag(args, "served-model", func(string) string { return h.model })
	}
	// A dcgm-exporter on a machine the docs name is the stand-in's
	// simulated one (knee serve's /dcgm/metrics).
	args = mapFlag(args, "gpu-metrics-url", func(u string) string {
		if m := realTarget.FindString(u); m != "" {
			return h.standIn + u[len(m):]
		}
		return u
	})
	_, hasURL := flagValue(args, "url")
	switch name {
	case "bench", "sweep", "calibrate", "selftest":
		if _, from := flagValue(args, "from"); from {
			break
		}
		for _, f := range []string{"duration", "warmup", "ramp", "decode-duration", "holdout-duration"} {
			args = mapFlag(args, f, scaleDuration)
		}
		args = mapFlag(args, "requests", capCount(maxRealtimeRequests))
		args = mapFlag(args, "warmup", capCount(2))
		if name == "bench" || name == "sweep" {
			// A scaled run holds a handful of random arrivals (8 req/s
			// for 0.8 s): unseeded, about one in twenty-five left a later
			// --split's half empty. A fixed seed makes the example's
			// workload the same every run.
			args = withDefault(args, "seed", "1")
		}
		if !hasURL && (name == "bench" || name == "sweep") {
			args = withDefault(args, "step-time-scale", "0.25")
		}
		if name == "sweep" {
			args = withDefault(args, "requests", strconv.Itoa(maxRealtimeRequests))
			if _, ok := flagValue(args, "auto"); ok {
				args = withDefault(args, "max", "32")
			}
		}
		if name == "bench" {
			if _, ok := flagValue(args, "duration"); !ok {
				args = withDefault(args, "requests", strconv.Itoa(maxRealtimeRequests))
			}
		}
		if name == "calibrate" {
			args = withDefault(args, "decode-duration", "300ms")
			args = withDefault(args, "decode-output-tokens", "64")
			args = withDefault(args, "decode-points", "1x64,16x64")
			args = withDefault(args, "holdout-duration", "500ms")
			args = withDefault(args, "prefill-requests", "2")
			args = withDefault(args, "prefill-lengths", "128,1024")
		}
		if name == "selftest" {
			args = withDefault(args, "concurrency", "1,8")
			args = withDefault(args, "duration", "300ms")
			args = withDefault(args, "warmup", "100ms")
		}
	case "diagnose":
		for _, f := range []string{"split", "window", "baseline-window"} {
			args = mapFlag(args, f, scaleSpan)
		}
	case "sim", "sim sweep", "lab":
		args = mapFlag(args, "requests", capCount(maxSimRequests))
	case "plan":
		args = mapFlag(args, "requests", capCount(600))
		args = withDefault(args, "requests", "600")
		args = mapFlag(args, "validate-requests", capCount(2000))
		args = withDefault(args, "validate-requests", "2000")
	case "serve", "ui":
		args = mapFlag(args, "addr", func(string) string { return "127.0.0.1:0" })
		args = withDefault(args, "addr", "127.0.0.1:0")
		args = dropFlag(args, "open") // no browser in a test
	case "report", "compare", "records":
		args = h.mapRunIDs(args)
	}
	return args
}

// mapRunIDs replaces run ids the page's database lacks with its newest runs
// (the page's "compare 12 13" compares the last two it made).
func (h *docsHarness) mapRunIDs(args []string) []string {
	st, err := store.OpenReadOnly(h.env["KNEE_DB"])
	if err != nil {
		return args
	}
	defer st.Close()
	runs, _ := st.ListRuns(store.Filter{})
	have := map[string]bool{}
	for _, r := range runs {
		have[strconv.FormatInt(r.ID, 10)] = true
	}
	var missing []int
	for i, a := range args {
		if _, err := strconv.Atoi(a); err == nil && !have[a] && (i == 0 || !strings.HasPrefix(args[i-1], "-")) {
			missing = append(missing, i)
		}
	}
	for k, i := range missing {
		// With fewer runs than the page names, the oldest stands for the rest.
		back := min(len(missing)-1-k, max(len(runs)-1, 0))
		args[i] = "last~" + strconv.Itoa(back)
	}
	return args
}

// standIns writes a stand-in for each bare file name the command reads
// that does not exist yet.
func (h *docsHarness) standIns(args []string) {
	var reads []string
	for _, f := range []string{"from", "baseline", "profile", "preset-file", "trace", "dataset", "scenario-file"} {
		if v, ok := flagValue(args, f); ok {
			reads = append(reads, v)
		}
	}
	switch subcommand(append([]string{"knee"}, args...)) {
	case "diagnose", "import":
		if last := args[len(args)-1]; !strings.HasPrefix(last, "-") {
			reads = append(reads, last)
		}
	}
	for _, p := range reads {
		if p == "-" || filepath.Base(p) != p {
			continue
		}
		if _, err := os.Stat(filepath.Join(h.dir, p)); err == nil {
			continue
		}
		h.writeStandIn(p, args)
	}
}

func (h *docsHarness) writeStandIn(name string, args []string) {
	t := h.t
	path := filepath.Join(h.dir, name)
	switch ext := filepath.Ext(name); {
	case ext == ".csv":
		os.WriteFile(path, []byte("concurrency,throughput_rps,output_tps,ttft_p95_ms,itl_p95_ms,error_rate\n"+
			"1,1.1,140,60,7,0\n4,4.2,540,80,7.5,0\n16,14.5,1860,150,9,0\n32,20.1,2570,900,14,0\n64,21.0,2690,4200,25,0.01\n"), 0o644)
	case ext == ".jsonl":
		// Simulated records of a few seconds of send times, so a scaled
		// --split or --window falls inside.
		dir := filepath.Join(t.TempDir(), "standin")
		if code, _, errs := kneeEnv(t, h.env, "sim", "--no-store", "--rate", "20", "--duration", "6s", "--seed", "2", "--out", dir); code != 0 {
			t.Fatalf("stand-in %s: %s", name, errs)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "records.jsonl"))
		os.WriteFile(path, b, 0o644)
	case ext == ".json":
		b, err := os.ReadFile(filepath.Join(h.repo, "internal", "ingest", "testdata", "vllm_detailed.json"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path, b, 0o644)
	case ext == ".yaml" || ext == ".yml":
		if _, ok := flagValue(args, "preset-file"); ok {
			gpu, _ := flagValue(args, "gpu")
			model, _ := flagValue(args, "model")
			os.WriteFile(path, []byte(fmt.Sprintf("gpus:\n  - name: %s\n    memory_gib: 192\n    bandwidth_gbps: 5300\n    bf16_tflops: 1307\n    interconnect_gbps: 448\n"+
				"models:\n  - name: %s\n    layers: 16\n    hidden_size: 2048\n    heads: 32\n    kv_heads: 8\n    head_dim: 64\n    ffn_size: 8192\n"+
				"    vocab_size: 128256\n    max_context: 8192\n    weight_precision: bf16\n", gpu, model)), 0o644)
			return
		}
		if code, _, errs := kneeEnv(t, h.env, "calibrate", "--gpu", "h100", "--model", "llama-3.1-8b", "--decode-duration", "300ms",
			"--decode-output-tokens", "64", "--decode-points", "1x64,16x64", "--holdout-duration", "500ms",
			"--prefill-requests", "2", "--prefill-lengths", "128,1024", "--out", path); code != 0 {
			t.Fatalf("stand-in profile %s: %s", name, errs)
		}
	}
}

// syncBuffer is an output buffer a long-running command writes to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// background is a long-running command (knee serve, knee ui).
type background struct {
	cmd    docCommand
	cancel context.CancelFunc
	done   chan int
	out    syncBuffer
	errb   syncBuffer
}

var listenRE = regexp.MustCompile(`(?:listening on|knee ui:) (http://[0-9.:]+)`)

// start runs a long-running command until the page is done; it returns its
// base URL once it listens.
func (h *docsHarness) start(c docCommand, args []string) (string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cmd: c, cancel: cancel, done: make(chan int, 1)}
	env := &Env{Stdin: strings.NewReader(""), Stdout: &b.out, Stderr: &b.errb, Getenv: h.getenv}
	go func() { b.done <- MainEnv(ctx, env, args) }()
	h.bg = append(h.bg, b)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case code := <-b.done:
			b.done <- code
			return "", fmt.Errorf("exited %d before listening\n%s%s", code, b.out.String(), b.errb.String())
		default:
		}
		if m := listenRE.FindStringSubmatch(b.out.String()); m != nil {
			resp, err := http.Get(m[1] + "/")
			if err == nil {
				resp.Body.Close()
				return m[1], nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", fmt.Errorf("not listening after 20 s\n%s%s", b.out.String(), b.errb.String())
}

// stopAll ends the page's long-running commands; each must exit 0.
func (h *docsHarness) stopAll() {
	for _, b := range h.bg {
		b.cancel()
		select {
		case code := <-b.done:
			if code != 0 {
				h.t.Errorf("%s: exit %d after Ctrl-C\n%s%s", b.cmd, code, b.out.String(), b.errb.String())
			}
		case <-time.After(20 * time.Second):
			h.t.Errorf("%s: did not stop within 20 s of Ctrl-C", b.cmd)
		}
	}
	h.bg = nil
}

func (h *docsHarness) getenv(k string) string { return h.env[k] }

// curl sends the documented request to the last knee serve (else the
// stand-in) and checks that a stream came back.
func (h *docsHarness) curl(c docCommand) error {
	var url, body string
	headers := http.Header{}
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case a == "-H" && i+1 < len(c.args):
			k, v, _ := strings.Cut(c.args[i+1], ":")
			headers.Set(strings.TrimSpace(k), strings.TrimSpace(v))
			i++
		case (a == "-d" || a == "--data") && i+1 < len(c.args):
			body = c.args[i+1]
			i++
		case strings.HasPrefix(a, "http"):
			url = a
		}
	}
	base := h.lastServ
	if base == "" {
		base = h.standIn
	}
	url = realTarget.ReplaceAllString(url, base)
	method := "GET"
	if body != "" {
		method = "POST"
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = headers
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || (strings.Contains(body, `"stream":true`) && !bytes.Contains(got, []byte("data:"))) {
		return fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, got)
	}
	return nil
}

// checkSynopsis: every --flag of a usage line exists in the command's -h.
func (h *docsHarness) checkSynopsis(c docCommand) {
	name := subcommand(c.args)
	helpArgs := append(strings.Fields(name), "-h")
	_, out, errs := kneeEnv(h.t, h.env, helpArgs...)
	help := out + errs
	for _, m := range regexp.MustCompile(`--[a-z][a-z0-9-]*`).FindAllString(c.text, -1) {
		if !strings.Contains(help, m+" ") && !strings.Contains(help, m+"\n") && !strings.Contains(help, m+"=") {
			h.t.Errorf("%s\n  %s is not a flag of knee %s (see knee %s -h)", c, m, name, name)
		}
	}
}

func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{filepath.Join("..", "..", "README.md")}
	more, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(more)
	return append(pages, more...)
}

// docsPageEnv names the one page a child test process runs: each page runs
// in its own process (runPageInChild), because a page's commands run in its
// own working directory (t.Chdir), which is the whole process's.
const docsPageEnv = "KNEE_DOCS_PAGE"

// docsCommandsRE is the line a child prints with the number of commands it
// ran, which the parent adds up.
var docsCommandsRE = regexp.MustCompile(`docs page ran (\d+) commands`)

func TestDocsExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command")
	}
	child := os.Getenv(docsPageEnv)
	if child != "" {
		runDocPage(t, child)
		return
	}
	// The pages run side by side (-parallel: GOMAXPROCS by default, 4 in
	// scripts/test.sh), each in a child process: they check exit codes,
	// never a time, and spend most of theirs waiting on the simulated
	// server's clock.
	var mu sync.Mutex
	total := 0
	began := time.Now()
	t.Cleanup(func() { // after every page's subtest
		t.Logf("%d documented commands in %.1f s", total, time.Since(began).Seconds())
		if f := flag.Lookup("test.run"); !t.Failed() && total < 20 && (f == nil || !strings.Contains(f.Value.String(), "/")) {
			t.Errorf("found only %d documented commands: is the extractor broken?", total)
		}
	})
	for _, page := range docPages(t) {
		name, _ := filepath.Rel(filepath.Join("..", ".."), page)
		if len(extractCommands(t, page, name)) == 0 {
			continue
		}
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			t.Parallel()
			n := runPageInChild(t)
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
}

// runPageInChild runs the subtest's page in a child process of this test
// binary and returns the number of commands it ran; the child's log is this
// test's log.
func runPageInChild(t *testing.T) int {
	_, page, _ := strings.Cut(t.Name(), "/")
	ctx := context.Background()
	args := []string{"-test.run=^TestDocsExamplesRun$/^" + regexp.QuoteMeta(page) + "$", "-test.count=1", "-test.v"}
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), docsPageEnv+"="+page)
	out, err := cmd.CombinedOutput()
	log := strings.TrimRight(string(out), "\n")
	if err != nil {
		t.Fatalf("the page's child test process: %v\n%s", err, log)
	}
	m := docsCommandsRE.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the page's child test process did not say how many commands it ran:\n%s", log)
	}
	t.Log(log)
	n, _ := strconv.Atoi(m[1])
	return n
}

// runDocPage runs the commands of one page (named as its subtest is), in
// order, in this process.
func runDocPage(t *testing.T, want string) {
	standIn, srv := simservertest.Start(t, func(c *simserver.Config) { c.Engine.StepTimeScale = 0.25 })
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, page := range docPages(t) {
		name, _ := filepath.Rel(filepath.Join("..", ".."), page)
		if strings.ReplaceAll(name, "/", "_") != want {
			continue
		}
		found = true
		cmds := extractCommands(t, page, name)
		t.Run(want, func(t *testing.T) {
			// The page's commands run in a fresh folder, as from a checkout:
			// the repository's files are reachable by the same paths.
			dir := t.TempDir()
			for _, top := range []string{"internal", "docs", "scripts"} {
				if err := os.Symlink(filepath.Join(repo, top), filepath.Join(dir, top)); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(dir)
			h := &docsHarness{t: t, dir: dir, repo: repo, standIn: standIn, model: srv.Model(),
				env: map[string]string{"KNEE_DB": filepath.Join(dir, "knee.db"), "HOME": dir}}
			defer h.stopAll()
			total := 0
			for _, c := range cmds {
				if c.args[0] == "curl" {
					if err := h.curl(c); err != nil {
						t.Errorf("%s\n  %v", c, err)
					}
					continue
				}
				if isSynopsis(c.args) {
					h.checkSynopsis(c)
					continue
				}
				args, unset := expandEnv(h.boundExample(c))
				if unset != "" {
					t.Logf("%s\n  not run here: $%s is not set (CI sets it up)", c, unset)
					continue
				}
				h.standIns(args)
				total++
				switch subcommand(c.args) {
				case "serve", "ui":
					base, err := h.start(c, args)
					if err != nil {
						t.Errorf("%s\n  ran as: knee %s\n  %v", c, strings.Join(args, " "), err)
						continue
					}
					if subcommand(c.args) == "serve" {
						h.lastServ = base
					}
					continue
				}
				t0 := time.Now()
				code, out, errs := kneeEnv(t, h.env, args...)
				if code != ExitOK && code != ExitSLO {
					t.Errorf("%s\n  ran as: knee %s\n  exit %d\n%s%s", c, strings.Join(args, " "), code, lastLines(out, 5), lastLines(errs, 10))
				}
				t.Logf("%5.1fs %s", time.Since(t0).Seconds(), c.text)
			}
			t.Logf("docs page ran %d commands", total)
		})
	}
	if !found {
		t.Fatalf("%s=%s: no such page", docsPageEnv, want)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return "  " + strings.Join(lines, "\n  ") + "\n"
}

// The extractor reads what the pages hold: quoting, continuations,
// comments, synopses.
func TestDocsExtractor(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "p.md")
	os.WriteFile(page, []byte("text\n```sh\n# a comment\nknee bench --url http://localhost:8000 \\\n  --slo 'p95(ttft)<2s' --label \"a b\"   # why\n"+
		"go run ./cmd/knee runs\nls -l\n```\n\n```json\n{\"knee\": 1}\n```\n```\nknee report RUN [--format text|md]\n```\n"), 0o644)
	cmds := extractCommands(t, page, "p.md")
	if len(cmds) != 3 {
		t.Fatalf("%d commands: %v", len(cmds), cmds)
	}
	want := []string{"knee", "bench", "--url", "http://localhost:8000", "--slo", "p95(ttft)<2s", "--label", "a b"}
	if strings.Join(cmds[0].args, "|") != strings.Join(want, "|") || cmds[0].line != 4 {
		t.Errorf("first: line %d %q", cmds[0].line, cmds[0].args)
	}
	if strings.Join(cmds[1].args, " ") != "knee runs" || isSynopsis(cmds[1].args) || !isSynopsis(cmds[2].args) {
		t.Errorf("second/third: %v %v", cmds[1].args, cmds[2].args)
	}
	h := &docsHarness{standIn: "http://127.0.0.1:1", model: "m", env: map[string]string{}}
	got := h.boundExample(docCommand{args: []string{"knee", "bench", "--url", "http://localhost:8000", "--model", "meta-llama/X", "--duration", "60s", "--warmup", "10s"}})
	if strings.Join(got, " ") != "bench --url http://127.0.0.1:1 --model m --duration 800ms --warmup 133.333333ms --seed 1" {
		t.Errorf("bounded: %v", got)
	}
	got = h.boundExample(docCommand{args: []string{"knee", "diagnose", "--split", "30s", "r/records.jsonl"}})
	if strings.Join(got, " ") != "diagnose --split 400ms r/records.jsonl" {
		t.Errorf("bounded diagnose: %v", got)
	}
}
