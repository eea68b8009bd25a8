package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
)

func TestTargetNotesAndPresetList(t *testing.T) {
	cfg := enginetest.H100Llama8B(t, 2)
	g, m := cfg.GPU, cfg.Model
	if got := Target(cfg, "SGLang-like"); got != "simulated SGLang-like engine: "+m.Name+" on 2× "+g.Name {
		t.Errorf("target %q", got)
	}
	if got := Target(cfg, ""); got != "simulated engine: "+m.Name+" on 2× "+g.Name {
		t.Errorf("target of no engine family %q", got)
	}
	eng, err := simengine.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := Result{End: 3 * time.Second, Engine: simengine.EngineStats{Steps: 7, PrefixCacheHits: 25, PrefixCacheQueries: 100, PrefillTokens: 75}}
	notes := Notes(eng, res, 0)
	if len(notes) != 4 || notes[2] != "engine: 7 steps, 0 preemptions, 0 rejected; 3.0 s of virtual time simulated in 0.00 s" ||
		notes[3] != "prefix cache: 25 of 100 prompt tokens hit (25.0%), 75 tokens prefilled" {
		t.Errorf("notes %q", notes)
	}
	cfg.NoPrefixCaching = true
	if eng, err = simengine.NewEngine(cfg); err != nil {
		t.Fatal(err)
	}
	if notes := Notes(eng, res, 0); !strings.HasPrefix(notes[len(notes)-1], "prefix caching off") {
		t.Errorf("prefix caching off: notes %q", notes)
	}

	var b strings.Builder
	cat := simengine.NewCatalog()
	if err := ListPresets(&b, cat); err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{"GPU  ", "model  ", "--preset-file"}, g.Name, m.Name) {
		if !strings.Contains(b.String(), want) {
			t.Errorf("preset list lacks %q", want)
		}
	}
	if n := strings.Count(b.String(), "\n"); n != len(cat.GPUs())+len(cat.Models())+7 {
		t.Errorf("%d lines for %d GPUs and %d models, want one each and 7 more", n, len(cat.GPUs()), len(cat.Models()))
	}
}
