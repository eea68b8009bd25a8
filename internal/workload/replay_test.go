package workload

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
)

func TestReplay(t *testing.T) {
	ok := Replay{Speedup: 1, Sample: 1}
	if err := ok.Check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, tc := range []struct {
		set  func(*Replay)
		want string
	}{
		{func(r *Replay) { r.Speedup = 0 }, "--trace-speedup 0: want a positive factor"},
		{func(r *Replay) { r.Sample = 1.5 }, "--trace-sample 1.5: want a fraction in (0, 1]"},
		{func(r *Replay) { r.Start, r.End = 2*time.Second, time.Second }, "--trace-start 2s --trace-end 1s: want 0 <= start < end"},
		{func(r *Replay) { r.MaxContext = -1 }, "--trace-max-context -1: want 0 or more tokens"},
	} {
		r := ok
		tc.set(&r)
		if err := r.Check(); err == nil || !badinput.Is(err) || err.Error() != tc.want {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}

	path := filepath.Join("testdata", "trace_mooncake.jsonl")
	r := Replay{Speedup: 2, Sample: 0.5, MaxContext: 4096, Format: "mooncake"}
	tr, err := r.Open(context.Background(), path, 1, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	kv := r.ConfigKV(path, tr)
	for _, p := range [][2]string{{"trace", path}, {"trace_format", "mooncake"}, {"trace_speedup", "2"}, {"trace_sample", "0.5"}, {"trace_max_context", "4096"}} {
		if !slices.Contains(kv, p) {
			t.Errorf("config %v lacks %v", kv, p)
		}
	}
	if _, err := r.Open(context.Background(), filepath.Join("testdata", "missing.jsonl"), 1, nil, 0); err == nil || !badinput.Is(err) || !strings.HasPrefix(err.Error(), "--trace: ") {
		t.Errorf("missing file: %v", err)
	}
}
