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
	if len(piece) > longPieceBytes {
		return m.encodeLong(piece, out)
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

// longPieceBytes is where encodePiece switches from the simple quadratic
// merge loop (fastest for word-sized pieces) to mergeLong, so that a long
// run without pre-tokeniser breaks (a base64 blob, a line of "=====") in a
// dataset costs O(n log n) instead of O(n²).
const longPieceBytes = 256

// mergeLong runs BPE over n initial parts (0..n-1, left to right) with a
// priority queue. rank(a, b) is the rank of merging adjacent parts a and b
// (false: not mergeable); merge(a, b) absorbs b into a. Ties go to the
// leftmost pair, exactly like the linear scan. It returns the surviving
// parts in order.
func mergeLong(n int, rank func(a, b int) (int, bool), merge func(a, b int)) []int {
	next := make([]int, n)
	prev := make([]int, n)
	epoch := make([]int, n)
	for k := range n {
		next[k], prev[k] = k+1, k-1
	}
	next[n-1] = -1
	h := &pairHeap{}
	push := func(a int) {
		if a < 0 || next[a] < 0 {
			return
		}
		if r, ok := rank(a, next[a]); ok {
			h.push(pairItem{rank: r, left: a, epoch: epoch[a]})
		}
	}
	for k := 0; k+1 < n; k++ {
		push(k)
	}
	for h.len() > 0 {
		it := h.pop()
		a := it.left
		if it.epoch != epoch[a] || next[a] < 0 {
			continue // stale: a or its right neighbour changed since
		}
		b := next[a]
		merge(a, b)
		next[a] = next[b]
		if next[b] >= 0 {
			prev[next[b]] = a
		}
		next[b] = -2 // dead
		epoch[a]++
		push(a)
		if p := prev[a]; p >= 0 {
			epoch[p]++
			push(p)
		}
	}
	var out []int
	for k := 0; k >= 0; k = next[k] {
		out = append(out, k)
	}
	return out
}

type pairItem struct{ rank, left, epoch int }

// pairHeap is a binary min-heap ordered by (rank, left); parts keep their
// initial index, so a smaller left is further left.
type pairHeap struct{ items []pairItem }

func (h *pairHeap) len() int { return len(h.items) }

func (h *pairHeap) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}

func (h *pairHeap) push(it pairItem) {
	h.items = append(h.items, it)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *pairHeap) pop() pairItem {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(l, m) {
			m = l
		}
		if r < last && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}

// encodeLong is rankBPE for long pieces: part k spans [k, end[k]).
func (m *rankBPE) encodeLong(piece string, out []int) []int {
	end := make([]int, len(piece))
	for k := range end {
		end[k] = k + 1
	}
	parts := mergeLong(len(piece),
		func(a, b int) (int, bool) { r, ok := m.ranks[piece[a:end[b]]]; return r, ok },
		func(a, b int) { end[a] = end[b] })
	for _, k := range parts {
		if id, ok := m.ranks[piece[k:end[k]]]; ok {
			out = append(out, id)
		}
	}
	return out
}
