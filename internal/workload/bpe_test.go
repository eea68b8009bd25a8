package workload

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestLongPieceMergeMatchesLinear checks the heap merge used for long
// pieces against the linear merge on the same input, for both BPE
// formulations, and that a huge unbroken piece encodes in reasonable time
// (the quadratic loop would take minutes on 200 KB).
func TestLongPieceMergeMatchesLinear(t *testing.T) {
	tk := mustTokenizer(t, "cl100k_base").(*tiktokenTokenizer)
	m := tk.model.(*rankBPE)
	hf := mustTokenizer(t, "testdata/tiny-tokenizer.json").(*hfTokenizer)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "ab", "th", "e", "the", "cat", "ll", "o", "hello", "=", "Ġ", "é"}
	for trial := range 100 {
		var sb strings.Builder
		for sb.Len() < 300+trial {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		piece := sb.String()
		if got, want := m.encodeLong(piece, nil), linearRank(m, piece); !slices.Equal(got, want) {
			t.Fatalf("rank BPE on %q:\n heap %v\n linear %v", piece, got, want)
		}
		hm := hf.model
		long := hm.encodePiece(piece, nil) // > longPieceBytes: heap path
		if lin := linearMerge(hm, piece); !slices.Equal(long, lin) {
			t.Fatalf("merge BPE on %q:\n heap %v\n linear %v", piece, long, lin)
		}
	}
	huge := strings.Repeat("abcdefgh", 25_000)
	if n := tk.Count(huge); n < 1000 {
		t.Fatalf("200 KB piece gave %d tokens", n)
	}
	if dec := tk.Decode(tk.Encode(huge)); dec != huge {
		t.Fatal("200 KB piece does not round-trip")
	}
}

// linearRank is rankBPE's quadratic loop without the long-piece switch.
func linearRank(m *rankBPE, piece string) []int {
	var stack [64]int
	bounds := stack[:0]
	for k := 0; k <= len(piece); k++ {
		bounds = append(bounds, k)
	}
	for len(bounds) > 2 {
		best, bestK := int(^uint(0)>>1), -1
		for k := 0; k+2 < len(bounds); k++ {
			if r, ok := m.ranks[piece[bounds[k]:bounds[k+2]]]; ok && r < best {
				best, bestK = r, k
			}
		}
		if bestK < 0 {
			break
		}
		bounds = append(bounds[:bestK+1], bounds[bestK+2:]...)
	}
	var out []int
	for k := 0; k+1 < len(bounds); k++ {
		out = append(out, m.ranks[piece[bounds[k]:bounds[k+1]]])
	}
	return out
}

func linearMerge(m *mergeBPE, piece string) []int {
	var syms []int
	for i := 0; i < len(piece); i++ {
		syms = append(syms, m.byteID[piece[i]])
	}
	for len(syms) > 1 {
		best, bestK, bestID := int(^uint(0)>>1), -1, 0
		for k := 0; k+1 < len(syms); k++ {
			if mg, ok := m.pairs[uint64(syms[k])<<32|uint64(syms[k+1])]; ok && mg.rank < best {
				best, bestK, bestID = mg.rank, k, mg.id
			}
		}
		if bestK < 0 {
			break
		}
		syms[bestK] = bestID
		syms = append(syms[:bestK+1], syms[bestK+2:]...)
	}
	return syms
}
