package simengine

import "testing"

// The first token carries queue and prefill (a server sends them as headers
// with it), and they agree with the Finished emission's.
func TestFirstTokenPhases(t *testing.T) {
	cfg := mustConfig(t, "h100", "llama-3.1-8b", 1)
	cfg.MaxNumSeqs = 2 // the third request waits: a non-zero queue time
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 3; id++ {
		if err := e.Submit(id, 512, 4); err != nil {
			t.Fatal(err)
		}
	}
	first := map[int64]Phases{}
	final := map[int64]Phases{}
	for e.HasWork() {
		e.Step(func(em Emission) {
			if em.Index == 0 {
				first[em.ID] = em.Phases
			}
			if em.Finished {
				final[em.ID] = em.Phases
			}
		})
	}
	for id := int64(1); id <= 3; id++ {
		f, z := first[id], final[id]
		if f.Prefill <= 0 || f.Decode != 0 || f.Queue != z.Queue || f.Prefill != z.Prefill {
			t.Errorf("request %d: first-token phases %+v, finished %+v", id, f, z)
		}
	}
	if first[3].Queue <= 0 {
		t.Errorf("request 3 waited for a slot but its queue time is %d", first[3].Queue)
	}
}
