package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/knee-dev/knee/internal/cmdhelp"
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/web"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
)

// newUICmd is knee ui: it serves the web interface (internal/web) until interrupted.
func newUICmd(ctx context.Context, env *Env) *cobra.Command {
	cmd := newCommand(env, "ui")
	fs := cmd.Flags()
	addr := fs.String("addr", "127.0.0.1:8321", "listen address (loopback by default; another address exposes the UI and prints a warning)")
	open := fs.Bool("open", false, "open the page in the default browser")
	db := dbFlag(fs)
	target := fs.String("url", "", "an OpenAI-compatible base URL the page may start short benches against (none unless given)")
	model := fs.String("model", "", "model name for benches against --url")
	trace := fs.String("trace", "", "a trace file the Learn page replays on the simulator beside fixed lengths (formats as knee bench --trace)")
	export := fs.String("export", "", "write the interface to `DIR` as static files any web server can host (the simulator as WebAssembly), then exit")
	cmd.Long = "Usage: knee ui [--addr 127.0.0.1:8321] [--open] [--db FILE] [--url URL --model NAME] [--trace FILE] [--export DIR]\n\nThe web interface: an interactive simulator, the request lifecycle, the lab\nscenarios, stored runs and a live view of a running knee bench."
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if fs.NArg() > 0 {
			return Usagef("unexpected argument %q (knee ui takes only flags)", fs.Arg(0))
		}
		if *export != "" {
			return uiExport(env, *export)
		}
		host, _, err := net.SplitHostPort(*addr)
		if err != nil {
			return Usagef("--addr %q: want host:port, e.g. 127.0.0.1:8321", *addr)
		}
		if *target != "" {
			u, err := url.Parse(*target)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return Usagef("--url %q: want an http(s) base URL such as http://localhost:8000", *target)
			}
			if *model == "" {
				return Usagef("--model is required with --url (the model name the server serves)")
			}
		}
		var tr *workload.Trace
		if *trace != "" {
			if tr, err = workload.OpenTrace(*trace, workload.TraceOptions{}); err != nil {
				return Usagef("--trace: %v", err)
			}
			if tr.Info().Kept == 0 {
				return Usagef("--trace %s: no request to replay (every row empty)", *trace)
			}
		}
		st, err := openDB(env, *db)
		if err != nil {
			return err
		}
		defer st.Close()
		cfg := web.Config{Store: st, BenchURL: redactURL(*target), Trace: tr,
			ReportHTML: func(id int64) ([]byte, error) { return runlife.HTMLReport(st, id) },
			Compare:    func(a, b int64) (any, error) { return runlife.CompareStored(st, a, b) }}
		if *target != "" {
			cfg.StartBench = func(p web.BenchParams) error { return uiBench(ctx, st.Path(), *target, *model, p) }
		}
		srv, err := web.New(cfg)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return Usagef("--addr %s is in use (another knee ui, or another program, listens there): give another, e.g. --addr 127.0.0.1:0 for a free port", *addr)
			}
			return Usagef("--addr %s: %v", *addr, err)
		}
		srv.Allow(ln.Addr())
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			// Reached by a name or an outside address: accept that Host too.
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			srv.AllowHost(net.JoinHostPort(host, port))
			fmt.Fprintf(env.Stderr, "knee ui: warning: listening on %s, not loopback: anyone who can reach this address can use the UI and read your stored runs\n", ln.Addr())
		}
		hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
		page := "http://" + uiHost(ln.Addr()) + "/"
		fmt.Fprintf(env.Stdout, "knee ui: %s (runs from %s); Ctrl-C to stop\n", page, store.Redact(st.Path()))
		if *open {
			if err := openBrowser(page); err != nil {
				fmt.Fprintf(env.Stderr, "knee ui: could not open a browser (%v); open %s yourself\n", err, page)
			}
		}
		errc := make(chan error, 1)
		go func() { errc <- hs.Serve(ln) }()
		select {
		case <-ctx.Done():
		case err := <-errc:
			return fmt.Errorf("ui: %w", err)
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		fmt.Fprintln(env.Stdout, "knee ui: stopped")
		return nil
	}
	return cmd
}

// uiHost is the address to print: an unspecified bind is reached on loopback.
func uiHost(a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func openBrowser(page string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", page)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", page)
	default:
		cmd = exec.Command("xdg-open", page)
	}
	return cmd.Start()
}

// uiBench starts knee bench against the --url the user gave knee ui, in
// the background; it stores its run like any bench, where the runs page
// finds it.
func uiBench(ctx context.Context, db, target, model string, p web.BenchParams) error {
	args := []string{"--url", target, "--model", model, "--db", db, "--concurrency", strconv.Itoa(p.Concurrency),
		"--requests", strconv.Itoa(p.Requests)}
	if p.InputTokens != "" {
		args = append(args, "--input-tokens", p.InputTokens)
	}
	if p.OutputTokens != "" {
		args = append(args, "--output-tokens", p.OutputTokens)
	}
	var out bytes.Buffer
	env := &Env{Stdout: io.Discard, Stderr: &out, Getenv: func(string) string { return "" }}
	env.escapeOutput()
	done := make(chan error, 1)
	go func() {
		bench := newBenchCmd(ctx, env)
		bench.SilenceErrors, bench.SilenceUsage = true, true
		bench.SetFlagErrorFunc(cmdhelp.FlagError)
		bench.SetArgs(args)
		done <- bench.ExecuteContext(ctx)
	}()
	// A bad setting fails at once: report it to the page.
	select {
	case err := <-done:
		var ue *UsageError
		if errors.As(err, &ue) {
			return web.BadRequest(fmt.Errorf("bench: %v", ue))
		}
		return err
	case <-time.After(500 * time.Millisecond):
		return nil
	}
}
