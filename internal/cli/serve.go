package cli

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// serveFlags are the simulated server's own settings (the engine's come
// from simEngineFlags); knee serve and knee selftest register them.
type serveFlags struct {
	engine           simEngineFlags
	servedModelName  string
	tokenizer        string
	defaultMaxTokens int
	imageTokens      int
	seed             uint64
	faults           simserver.Faults
	// loraModules are adapter names clients may ask for (vLLM's
	// --lora-modules name=path; the path is not read: the adapters are
	// simulated), run on the engine with maxLoRAs slots of maxLoRARank.
	loraModules []string
	maxLoRAs    int
	maxLoRARank int
}

func (f *serveFlags) register(fs *pflag.FlagSet) {
	f.engine.register(fs)
	fs.StringVar(&f.servedModelName, "served-model-name", "", "model name clients send (default: the model preset's name)")
	fs.StringVar(&f.tokenizer, "tokenizer", workload.DefaultTokenizer, "tokenizer that counts prompt tokens: cl100k_base, o200k_base, or a HF tokenizer.json path")
	fs.IntVar(&f.defaultMaxTokens, "default-max-tokens", 256, "output length of requests that send no max_tokens")
	fs.IntVar(&f.imageTokens, "image-tokens", 0, "tokens every image of a prompt costs (0: ⌈W/28⌉·⌈H/28⌉ from its size, as Qwen2-VL's merged patches)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the fault draws (the n-th request gets the same faults on every run)")
	fs.Float64Var(&f.faults.ErrorRate, "fault-error-rate", 0, "share of requests answered 500 at once (0..1)")
	fs.Float64Var(&f.faults.StallRate, "fault-stall-rate", 0, "share of streams that stall mid-way for --fault-stall (0..1)")
	fs.DurationVar(&f.faults.StallDuration, "fault-stall", 2*time.Second, "length of an injected mid-stream stall")
	fs.Float64Var(&f.faults.CutRate, "fault-cut-rate", 0, "share of streams cut mid-way without finish or [DONE] (0..1)")
	fs.Float64Var(&f.faults.MalformedRate, "fault-malformed-rate", 0, "share of streams with one chunk of invalid JSON mid-way (0..1)")
	fs.DurationVar(&f.faults.SlowAfter, "fault-slow-after", 0, "from this long after start, engine steps take --fault-slow-factor times longer")
	fs.Float64Var(&f.faults.SlowFactor, "fault-slow-factor", 0, "slow-decode factor (>1) applied after --fault-slow-after (0: off)")
	fs.StringSliceVar(&f.loraModules, "lora-modules", nil, "LoRA adapters served beside the base model, as vLLM takes them: name=path (repeat, or comma-separated); clients name one as the model; the path is not read (the adapter is simulated)")
	fs.IntVar(&f.maxLoRAs, "max-loras", 1, "with --lora-modules: adapters the engine holds on the GPU at once (vLLM --max-loras)")
	fs.IntVar(&f.maxLoRARank, "max-lora-rank", 16, "with --lora-modules: the adapter slots' rank (vLLM --max-lora-rank); sizes the load on a miss")
}

// adapters reads --lora-modules into adapter names: name=path or a bare
// name, each once and none the base model's name.
func (f *serveFlags) adapters(base string) ([]string, error) {
	var names []string
	for _, m := range f.loraModules {
		name, _, _ := strings.Cut(strings.TrimSpace(m), "=")
		name = strings.TrimSpace(name)
		switch {
		case name == "" || strings.IndexFunc(name, unicode.IsControl) >= 0 || strings.ContainsAny(name, " \t"):
			return nil, Usagef("--lora-modules %q: want name=path (the name clients send as the model)", m)
		case slices.Contains(names, name):
			return nil, Usagef("--lora-modules: %q is given twice", name)
		case base != "" && strings.EqualFold(name, base):
			return nil, Usagef("--lora-modules: %q is the base model's name; an adapter needs its own", name)
		}
		names = append(names, name)
	}
	switch {
	case len(names) == 0:
	case f.maxLoRAs < 1 || f.maxLoRAs > 1024:
		return nil, Usagef("--max-loras %d: want 1 to 1024", f.maxLoRAs)
	case f.maxLoRARank < 1 || f.maxLoRARank > 512:
		return nil, Usagef("--max-lora-rank %d: want 1 to 512", f.maxLoRARank)
	}
	return names, nil
}

func (f *serveFlags) config(fs *pflag.FlagSet) (simserver.Config, error) {
	ec, err := f.engine.resolve(fs)
	if err != nil {
		return simserver.Config{}, err
	}
	if err := f.faults.Validate(); err != nil {
		return simserver.Config{}, Usagef("%v", err)
	}
	if f.defaultMaxTokens < 1 {
		return simserver.Config{}, Usagef("--default-max-tokens %d: want 1 or more", f.defaultMaxTokens)
	}
	if f.imageTokens < 0 {
		return simserver.Config{}, Usagef("--image-tokens %d: want 0 (count from the image's size) or more", f.imageTokens)
	}
	tok, err := workload.LoadTokenizer(f.tokenizer)
	if err != nil {
		return simserver.Config{}, Usagef("--tokenizer: %v", err)
	}
	adapters, err := f.adapters(f.servedModelName)
	if err != nil {
		return simserver.Config{}, err
	}
	if len(adapters) > 0 {
		ec.LoRA = simengine.LoRAConfig{MaxLoRAs: f.maxLoRAs, MaxLoRARank: f.maxLoRARank}
	}
	return simserver.Config{
		Engine: ec, ModelName: f.servedModelName, Tokenizer: tok, Adapters: adapters,
		DefaultMaxTokens: f.defaultMaxTokens, Faults: f.faults, Seed: f.seed, ImageTokens: f.imageTokens,
	}, nil
}

// checkListenAddr checks --addr is host:port with a port in 0..65535.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Usagef("--addr %q: want host:port, such as 127.0.0.1:8000 or :8000", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return Usagef("--addr %q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// newServeCmd is knee serve: it runs the simulated OpenAI-compatible server until interrupted.
func newServeCmd(ctx context.Context, env *Env) *cobra.Command {
	cmd := newCommand(env, "serve")
	fs := cmd.Flags()
	addr := fs.String("addr", "127.0.0.1:8000", "listen address (loopback by default; 0.0.0.0:8000 to expose it)")
	var f serveFlags
	f.register(fs)
	cmd.Long = "Usage: knee serve [flags]\n\nRun an OpenAI-compatible streaming server whose tokens leave at the times\nthe simulated engine says (/v1/chat/completions, /v1/completions, Anthropic's\n/v1/messages; /v1/embeddings, /v1/rerank and TEI's /rerank answered whole;\n/v1/models, /health, /metrics with vLLM's metric names; /dcgm/metrics as\nNVIDIA's dcgm-exporter would show its simulated GPUs: docs/energy.md)."
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if fs.NArg() > 0 {
			return Usagef("unexpected argument %q (knee serve takes only flags)", fs.Arg(0))
		}
		cfg, err := f.config(fs)
		if err != nil {
			return err
		}
		if err := checkListenAddr(*addr); err != nil {
			return err
		}
		base, srv, err := simserver.Start(ctx, *addr, cfg)
		if err != nil {
			// The address is the user's input: in use, not ours, not local.
			return Usagef("--addr %s: %v", *addr, err)
		}
		defer srv.Close()
		fmt.Fprintf(env.Stdout, "knee serve: %s\n", srv.Describe())
		fmt.Fprintf(env.Stdout, "listening on %s/v1 (model %q); metrics at %s/metrics, GPU metrics at %s%s; Ctrl-C to stop\n", base, srv.Model(), base, base, simserver.DCGMPath)
		if a := srv.Config().Adapters; len(a) > 0 {
			fmt.Fprintf(env.Stdout, "LoRA adapters (send as the model): %s\n", strings.Join(a, ", "))
		}
		fmt.Fprintf(env.Stdout, "try: curl -N %s/v1/chat/completions -H 'Content-Type: application/json' -d '{\"model\":%q,\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"max_tokens\":8,\"stream\":true}'\n", base, srv.Model())
		<-ctx.Done()
		fmt.Fprintln(env.Stdout, "knee serve: stopping")
		return nil
	}
	return cmd
}
