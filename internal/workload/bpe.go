package workload

import (
	"math"
	"sync"
)

// bpeModel encodes one pre-tokenised piece (raw bytes) into token ids.
type bpeModel interface {
	encodePiece(piece string, out []int) []int
	// whole returns the id of a piece that is certainly a single token
	// (one map lookup, no cache needed), or false.
	whole(piece string) (int, bool)
}

// rankBPE is tiktoken's formulation: the rank of a byte string is its
// token id, and the pair whose concatenation has the lowest rank merges
// first.
type rankBPE struct {
	ranks map[string]int
}

func (m *rankBPE) whole(piece string) (int, bool) {
	id, ok := m.ranks[piece]
	return id, ok
}

func (m *rankBPE) encodePiece(piece string, out []int) []int {
	if id, ok := m.ranks[piece]; ok {
		return append(out, id)
	}
	// bounds[k] is the start of part k; parts are piece[bounds[k]:bounds[k+1]].
	var stack [64]int
	bounds := stack[:0]
	for k := 0; k <= len(piece); k++ {
		bounds = append(bounds, k)
	}
	rankOf := func(k int) int { // rank of merging parts k and k+1
		if k+2 >= len(bounds) {
			return math.MaxInt
		}
		if r, ok := m.ranks[piece[bounds[k]:bounds[k+2]]]; ok {
			return r
		}
		return math.MaxInt
	}
	for len(bounds) > 2 {
		best, bestK := math.MaxInt, -1
		for k := 0; k+2 < len(bounds); k++ {
			if r := rankOf(k); r < best {
				best, bestK = r, k
			}
		}
		if bestK < 0 {
			break
		}
		bounds = append(bounds[:bestK+1], bounds[bestK+2:]...)
	}
	for k := 0; k+1 < len(bounds); k++ {
		if id, ok := m.ranks[piece[bounds[k]:bounds[k+1]]]; ok {
			out = append(out, id)
		}
		// Every single byte has a rank in tiktoken encodings, so a part
		// is never missing; if a broken table lacks one, it is dropped.
	}
	return out
}

// pieceCache remembers the ids of short pieces. Prompts and datasets repeat
// words constantly, so most pieces are one map lookup after warm-up. The
// cache stops growing at a fixed size rather than evicting: simple, and a
// miss only costs the BPE that would have run anyway.
type pieceCache struct {
	mu sync.RWMutex
	m  map[string][]int
}

const (
	pieceCacheMax      = 1 << 16
	pieceCacheMaxBytes = 32
)

func (c *pieceCache) get(piece string) ([]int, bool) {
	c.mu.RLock()
	ids, ok := c.m[piece]
	c.mu.RUnlock()
	return ids, ok
}

func (c *pieceCache) put(piece string, ids []int) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string][]int)
	}
	if len(c.m) < pieceCacheMax {
		c.m[string([]byte(piece))] = ids // copy: piece may alias a large string
	}
	c.mu.Unlock()
}

// cachedEncode encodes piece with model, consulting cache for short pieces.
func cachedEncode(cache *pieceCache, model bpeModel, piece string, out []int) []int {
	if id, ok := model.whole(piece); ok {
		return append(out, id)
	}
	if len(piece) > pieceCacheMaxBytes {
		return model.encodePiece(piece, out)
	}
	if ids, ok := cache.get(piece); ok {
		return append(out, ids...)
	}
	n := len(out)
	out = model.encodePiece(piece, out)
	cache.put(piece, append([]int(nil), out[n:]...))
	return out
}
