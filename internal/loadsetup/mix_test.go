package loadsetup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/simengine"
)

// loadMix reads body as a --mix file with the flags given.
func loadMix(t *testing.T, body string, given Given) (*Mix, *Choice, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	m, c := &Mix{Path: path}, &Choice{Seed: 1, SeedSet: true}
	return m, c, m.Load(given, c)
}

const testClass = "  - name: %s\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n"

func class(name, extra string) string {
	return strings.Replace(testClass, "%s", name, 1) + extra
}

func TestMixLoadTakesTheFileSeedUnlessSeedIsGiven(t *testing.T) {
	t.Parallel()
	body := "seed: 9\nclasses:\n" + class("a", "    share: 1\n    slo: [\"p95(ttft)<1s\"]\n    model: lora-a\n    api: completions\n")
	m, c, err := loadMix(t, body, Given{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Seed != 9 {
		t.Errorf("seed %d, want the file's 9", c.Seed)
	}
	if got := m.ClassSLOs(); len(got) != 1 || got[0] != "a: p95(ttft)<1s" || !m.Judged() {
		t.Errorf("class SLOs %q judged %v", got, m.Judged())
	}
	if got := m.APIs("chat"); strings.Join(got, ",") != "chat,completions" {
		t.Errorf("APIs %q, want chat and the class's completions", got)
	}
	if got := m.Adapters(); len(got) != 1 || got[0] != "lora-a" {
		t.Errorf("adapters %q", got)
	}
	if _, c, _ = loadMix(t, body, Given{"seed": true}); c.Seed != 1 {
		t.Errorf("seed %d with --seed given, want --seed's 1", c.Seed)
	}
	if _, _, err := loadMix(t, body, Given{"input-tokens": true}); !badinput.Is(err) || !strings.Contains(err.Error(), "give no --input-tokens with it") {
		t.Errorf("--input-tokens with --mix: %v", err)
	}
}

func TestMixOwnLoadsRefusals(t *testing.T) {
	t.Parallel()
	ownUsers := "classes:\n" + class("a", "    concurrency: 2\n")
	ownRates := "classes:\n" + class("a", "    rate: 2\n") + class("b", "    share: 1\n")
	for _, c := range []struct {
		body  string
		given Given
		sweep string // "rate", "concurrency": CheckSweep with those steps
		want  string
	}{
		{ownUsers, Given{"rate": true}, "", "give no --rate with them"},
		{ownUsers, Given{}, "", ""},
		{ownUsers, Given{}, "concurrency", "every class brings its own load (a)"},
		{ownRates, Given{"concurrency": true}, "", "give no --concurrency with them"},
		{ownRates, Given{}, "", "give the rate the classes with a share divide with --rate"},
		{ownRates, Given{"rate": true}, "", ""},
		{ownRates, Given{}, "concurrency", "sweep rate steps (--rate), not concurrency"},
		{ownRates, Given{}, "rate", ""},
	} {
		m, _, err := loadMix(t, c.body, Given{})
		if err != nil {
			t.Fatal(err)
		}
		if c.sweep != "" {
			err = m.CheckSweep(c.sweep == "rate")
		} else {
			err = m.CheckOwnLoads(c.given)
		}
		if c.want == "" && err != nil || c.want != "" && (!badinput.Is(err) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q given %v sweep %q: %v, want %q", c.body, c.given, c.sweep, err, c.want)
		}
	}
}

// Own users become pools beside the shared loop (none without shares);
// the configuration says the file and its own loads.
func TestMixApplyLoadPoolsAndConfig(t *testing.T) {
	t.Parallel()
	m, c, err := loadMix(t, "classes:\n"+class("a", "    concurrency: 3\n    model: m-a\n"), Given{})
	if err != nil {
		t.Fatal(err)
	}
	base, err := (&Choice{Input: "8", Output: "8", Tokenizer: "cl100k_base", Seed: 1, SeedSet: true}).Generator(Prompts{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadgen.Config{Concurrency: 32}
	src, err := m.ApplyLoad(&cfg, base, nil, c.Seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Concurrency != 0 || len(cfg.UserClasses) != 1 || cfg.UserClasses[0].Concurrency != 3 || cfg.UserClasses[0].Name != "a" {
		t.Fatalf("config: concurrency %d, user classes %+v", cfg.Concurrency, cfg.UserClasses)
	}
	if r := src(0); r.Class != "a" || r.Model != "m-a" || r.PromptTokens == 0 {
		t.Errorf("request 0: class %q model %q, %d prompt tokens", r.Class, r.Model, r.PromptTokens)
	}
	kv := m.Config([][2]string{{"concurrency", "32"}, {"input_tokens", "8"}})
	if len(kv) != 3 || kv[0][0] != "input_tokens" || kv[1] != [2]string{"mix", m.Path} || kv[2][0] != "mix_own_loads" {
		t.Errorf("config %q: want no shared concurrency, the file and its own loads", kv)
	}
}

func TestLoRAApplyNumbersAdapters(t *testing.T) {
	t.Parallel()
	m, _, err := loadMix(t, "classes:\n"+class("a", "    share: 0.5\n    model: x\n")+class("b", "    share: 0.25\n")+class("c", "    share: 0.25\n    model: x\n"), Given{})
	if err != nil {
		t.Fatal(err)
	}
	var ecfg simengine.Config
	ids, err := LoRA{MaxLoRAs: 2, MaxRank: 8}.Apply(&ecfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 0 || ids[2] != 1 || ecfg.LoRA.MaxLoRAs != 2 || ecfg.LoRA.MaxLoRARank != 8 {
		t.Errorf("ids %v, LoRA %+v", ids, ecfg.LoRA)
	}
	if _, err := (LoRA{MaxLoRAs: 0, MaxRank: 8}).Apply(&ecfg, m); !badinput.Is(err) || !strings.Contains(err.Error(), "--max-loras 0") {
		t.Errorf("--max-loras 0: %v", err)
	}
}
