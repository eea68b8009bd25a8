package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/diagnose"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/spf13/pflag"
)

// diagnoseRefFlags say what a run without a baseline is judged against: a
// simulated model and GPU (what the engine should do), and objectives.
type diagnoseRefFlags struct {
	gpu, model string
	tp         int
	slos       stringList
}

func (f *diagnoseRefFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.gpu, "gpu", "", "without a baseline: judge speeds against the simulator's expectation for this GPU preset (with --model; default: from summary.json beside FILE)")
	fs.StringVar(&f.model, "model", "", "without a baseline: the model preset for --gpu (knee sim --list)")
	fs.IntVar(&f.tp, "tp", 0, "tensor-parallel degree for --gpu/--model (default 1)")
	fs.Var(&f.slos, "slo", "without a baseline: an objective the run must meet, e.g. 'mean(tpot)<20ms' (repeatable); a failure names the phase it points to")
}

// reference builds the diagnosis reference. The model and GPU come from
// the flags, else from summary.json beside a records.jsonl written by knee
// bench --out (or knee sim --out) against the simulated server, whose
// configuration names them. nil when there is nothing to judge against.
func (f *diagnoseRefFlags) reference(inputPath string) (*diagnose.Reference, string, error) {
	gpu, model, tp := f.gpu, f.model, f.tp
	var slos []string
	slos = append(slos, f.slos...)
	from := ""
	if inputPath != "-" && (gpu == "" || model == "") {
		if cfg := summaryConfig(filepath.Join(filepath.Dir(inputPath), "summary.json")); cfg != nil {
			pick := func(keys ...string) string {
				for _, k := range keys {
					if v := cfg[k]; v != "" {
						return v
					}
				}
				return ""
			}
			if g := pick("sim_gpu", "gpu"); g != "" && gpu == "" {
				gpu, from = g, filepath.Join(filepath.Dir(inputPath), "summary.json")
				if model == "" {
					model = pick("sim_model", "model")
				}
				if tp == 0 {
					tp, _ = strconv.Atoi(pick("sim_tp", "tp"))
				}
			}
		}
	}
	ref := &diagnose.Reference{}
	if len(slos) > 0 {
		set, err := slo.ParseAll(slos)
		if err != nil {
			return nil, "", err
		}
		ref.SLOs, ref.Source = set, "the objectives "+fmt.Sprint(slos)
	}
	switch {
	case gpu != "" && model != "":
		g, err := simengine.LookupGPU(gpu)
		if err != nil {
			return nil, "", Usagef("--gpu: %v", err)
		}
		m, err := simengine.LookupModel(model)
		if err != nil {
			return nil, "", Usagef("--model: %v", err)
		}
		if tp < 1 {
			tp = 1
		}
		eng, err := simengine.NewEngine(simengine.DefaultConfig(g, m, tp))
		if err != nil {
			return nil, "", Usagef("--gpu %s --model %s --tp %d: %v", gpu, model, tp, err)
		}
		cfg := eng.Config()
		ref.Source = fmt.Sprintf("the simulator's %s on %d× %s", m.Name, tp, g.Name)
		ref.Expect = diagnose.EngineExpectation(cfg)
	case gpu != "" || model != "":
		if from == "" {
			return nil, "", Usagef("--gpu and --model go together: the simulator's expectation needs both (knee sim --list)")
		}
	}
	if ref.Expect == nil && ref.SLOs == nil {
		return nil, "", nil
	}
	return ref, from, nil
}

// maxSummaryBytes bounds the summary.json read beside a records file: knee
// writes it in kilobytes; anything far larger is not one.
const maxSummaryBytes = 64 << 20

// summaryConfig reads run.config of a knee summary.json (nil when absent or
// not one).
func summaryConfig(path string) map[string]string {
	b, err := badinput.ReadFile(path, maxSummaryBytes, "a knee summary.json")
	if err != nil {
		return nil
	}
	var s struct {
		Run struct {
			Config map[string]string `json:"config"`
		} `json:"run"`
	}
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return s.Run.Config
}
