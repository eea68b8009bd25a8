package cli

import (
	"context"
	"github.com/knee-dev/knee/internal/enginesetup"
	"slices"
	"strconv"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/spf13/pflag"
)

// embeddedFlags configure the in-process simulated server that knee bench
// (and sweep) start when no --url is given.
type embeddedFlags struct {
	gpu        string
	tp         int
	queueLimit int
	stepScale  float64
	profile    string
	noPrefix   bool
	// adapters are LoRA adapter names the server answers for (a mix's).
	adapters []string
	lora     simengine.LoRAConfig // applies when adapters are named
	fs       *pflag.FlagSet       // to tell which selections were given explicitly
}

func (e *embeddedFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&e.gpu, "gpu", "h100", "with no --url: GPU preset the embedded server simulates (knee sim --list)")
	fs.IntVar(&e.tp, "tp", 1, "with no --url: tensor-parallel degree of the simulated engine")
	fs.IntVar(&e.queueLimit, "queue-limit", 0, "with no --url: waiting requests beyond which the server answers 429 (0: unbounded)")
	fs.Float64Var(&e.stepScale, "step-time-scale", 1, "with no --url: multiply every simulated step time")
	fs.BoolVar(&e.noPrefix, "no-prefix-caching", false, "with no --url: turn off the simulated engine's prefix caching (on by default, as in vLLM)")
	fs.StringVar(&e.profile, "profile", "", "with no --url: cost profile from knee calibrate for the simulated engine (its GPU, model and TP unless given)")
	e.fs = fs
}

// refuseWithURL refuses the embedded server's settings next to --url: they
// would configure a server that is not started. allow names those that
// mean something else with --url (knee sweep --guided: what the server
// runs, for the simulator's prior).
func (e *embeddedFlags) refuseWithURL(url string, allow ...string) error {
	if url == "" || e.fs == nil {
		return nil
	}
	for _, name := range []string{"gpu", "tp", "queue-limit", "step-time-scale", "profile"} {
		if flagGiven(e.fs, name) && !slices.Contains(allow, name) {
			return Usagef("--%s configures knee's embedded simulated server, which --url replaces: give one or the other", name)
		}
	}
	return nil
}

// config lists the simulated server's settings for stored runs: the
// resolved engine (its defaults filled in, as the server runs it) under
// sim_ keys, plus the selections that are not engine settings. model is the
// preset asked for ("" for the default).
func (e *embeddedFlags) config(model string) [][2]string {
	var c [][2]string
	flags := e.engineFlags(model)
	if cat, err := flags.catalog(); err == nil {
		if cfg, err := flags.config(cat); err == nil {
			if eng, err := simengine.NewEngine(cfg); err == nil {
				for _, kv := range flags.configKV(eng.Config()) {
					c = append(c, [2]string{"sim_" + kv[0], kv[1]})
				}
			}
		}
	}
	if len(c) == 0 { // the server did not start either; keep what was asked
		c = [][2]string{{"sim_gpu", e.gpu}, {"sim_tp", strconv.Itoa(e.tp)}}
	}
	if e.profile != "" && !hasKey(c, "sim_profile") {
		c = append(c, [2]string{"sim_profile", e.profile})
	}
	return c
}

func hasKey(kv [][2]string, key string) bool {
	for _, p := range kv {
		if p[0] == key {
			return true
		}
	}
	return false
}

// engineFlags are the simulator settings the embedded server runs with.
func (e *embeddedFlags) engineFlags(model string) simEngineFlags {
	flags := simEngineFlags{enginesetup.Choice{GPU: e.gpu, Model: model, TP: e.tp, MemUtil: 0.9, QueueLimit: e.queueLimit, FrontEndMS: -1, StepTimeScale: e.stepScale, Profile: e.profile, NoPrefixCaching: e.noPrefix}}
	if flags.Model == "" {
		flags.Model = "llama-3.1-8b"
	}
	if e.fs != nil {
		flags.noteSet(e.fs)
	}
	return flags
}

// embeddedServer is a running in-process simulated server.
type embeddedServer struct {
	url, model, describe string
	preset               string // "Llama-3.1-8B on 1× H100-SXM"
	close                func()
}

// start runs the simulated server on loopback. model is the preset name
// ("" for the default). The server deliberately outlives ctx: on Ctrl-C the
// client cancels its requests itself and the records say so.
func (e *embeddedFlags) start(_ context.Context, model string) (*embeddedServer, error) {
	flags := e.engineFlags(model)
	cat, err := flags.catalog()
	if err != nil {
		return nil, err
	}
	cfg, err := flags.config(cat)
	if err != nil {
		return nil, err
	}
	if len(e.adapters) > 0 {
		cfg.LoRA = e.lora
	}
	url, srv, err := simserver.StartLocal(context.Background(), simserver.Config{Engine: cfg, Adapters: e.adapters})
	if err != nil {
		return nil, err
	}
	return &embeddedServer{url: url, model: srv.Model(), describe: srv.Describe(), preset: srv.Preset(), close: func() { srv.Close() }}, nil
}

// embeddedTarget is a run's target on the embedded server, as its reports
// and the run database show it: "embedded (Llama-3.1-8B on 1× H100-SXM)".
func embeddedTarget(preset string) string {
	if preset == "" {
		return "embedded"
	}
	return "embedded (" + preset + ")"
}
