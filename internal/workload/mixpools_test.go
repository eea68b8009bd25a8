package workload

import (
	"slices"
	"testing"
)

const ownUsersMix = `seed: 5
classes:
  - name: shared
    share: 1
    input_tokens: "64"
    output_tokens: "8"
  - name: batch
    concurrency: 2
    input_tokens: "1000:2000"
    output_tokens: "4"
  - name: chat
    concurrency: 3
    input_tokens: "16"
    output_tokens: "100:200"
`

// Each pool's requests are its class's, lengths from that class's
// generator; requests of the shared pool are drawn by the shares; one seed
// gives the same lengths.
func TestMixPoolsGiveTheirClass(t *testing.T) {
	m, err := ParseMix("mix.yaml", []byte(ownUsersMix))
	if err != nil {
		t.Fatal(err)
	}
	build := func(seed uint64) (*MixGenerator, *MixPools) {
		p := NewMixPools(m)
		g, err := NewMixGenerator(m, Spec{}, seed)
		if err != nil {
			t.Fatal(err)
		}
		return g.WithPools(p), p
	}
	g, p := build(9)
	if !slices.Equal(p.Users(), []int{2, 3}) {
		t.Fatalf("pools of %v users; want [2 3]", p.Users())
	}
	// The simulator issues requests in order; 3 and 4 are never said
	// (a shared user's), 6 is the chat pool's.
	for i, pool := range map[int64]int{0: 0, 1: 1, 2: 2, 5: 1, 6: 2} {
		p.Issue(i, pool)
	}
	want := []int{0, 1, 2, 0, 0, 1, 2, 0}
	for i, k := range want {
		if got := g.ClassOf(int64(i)); got != k {
			t.Errorf("request %d: class %d; want %d", i, got, k)
		}
		in, out := g.Lengths(int64(i))
		if gi, gout := g.Generator(k).Lengths(int64(i)); in != gi || out != gout {
			t.Errorf("request %d: %d in, %d out; want its class's %d, %d", i, in, out, gi, gout)
		}
	}
	if in, _ := g.Lengths(1); in < 1000 || in > 2000 {
		t.Errorf("batch request: %d input tokens; want 1000 to 2000", in)
	}
	g2, p2 := build(9)
	for i := range want {
		p2.Issue(int64(i), max(0, want[i]))
	}
	for i := range want {
		a1, b1 := g.Lengths(int64(i))
		a2, b2 := g2.Lengths(int64(i))
		if a1 != a2 || b1 != b2 {
			t.Errorf("request %d: %d/%d then %d/%d with one seed", i, a1, b1, a2, b2)
		}
	}
}
