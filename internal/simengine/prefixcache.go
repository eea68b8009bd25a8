package simengine

import "math"

// Automatic prefix caching as vLLM does it: every full KV block is named by a
// hash of its tokens chained with the hash of the block before it, so a hash
// names a block and the whole prefix in front of it. A waiting request looks
// up its leading blocks and skips computing the ones found; blocks whose
// last user left stay cached but free, and are evicted least recently freed
// first, the tail of a request before its head (vLLM frees in reverse).
//
// The engine never sees tokens: a request's content is a list of Segments
// (a content id and a token count), cheap to hold for a million requests.
// Blocks nobody can share (unique content) are plain counts, as without
// caching; only hashed blocks are tracked one by one.

// Segment is a run of tokens whose content is named by ID: equal IDs are
// equal text, so two requests whose segments agree up to some token share
// the KV of every full block before it. ID 0 is content unique to the
// request (never shared).
type Segment struct {
	ID     uint64
	Tokens int32
}

// Request is a request with its content, for SubmitRequest.
type Request struct {
	ID                        int64
	InputTokens, OutputTokens int
	At                        int64 // arrival, virtual ns (<= Now)
	// Content names the request's tokens from its first prompt token on:
	// the prompt's, and past InputTokens the answer's (a server that knows
	// the tokens it will generate names them, as vLLM hashes generated
	// tokens, so a segment may straddle the boundary). Prompt tokens the
	// segments do not reach are unique; segments beyond InputTokens +
	// OutputTokens are ignored. The engine copies it.
	Content []Segment
	// OutputID names the answer tokens that Content does not (0: never
	// reused), so a later prompt that repeats this answer — a
	// conversation's history — can hit the blocks computed while decoding
	// it.
	OutputID uint64
	// NoGapStats leaves the request's inter-token gaps out of
	// Config.OnGaps (a warm-up request, outside the measured window).
	NoGapStats bool
	// TransferredTokens are leading prompt tokens whose KV arrives with
	// the request, computed elsewhere (a prefill replica of a
	// disaggregated deployment): admission allocates their blocks without
	// computing them, and without a prefix-cache lookup. After a
	// preemption the request recomputes them as any other. Less than
	// InputTokens: the engine computes at least the last prompt token.
	TransferredTokens int
	// Adapter is the LoRA adapter the request runs with (0: the base
	// model; Config.LoRA must serve adapters otherwise).
	Adapter int32
}

// centry is one cached (hashed) block.
type centry struct {
	hash       uint64
	ref        int32 // requests using it; 0 = free, in the LRU list
	prev, next int32 // LRU links (-1 ends)
}

// prefixCache holds the hashed blocks. Blocks without a hash are counted in
// Engine.freeBlocks and req.blocks only.
type prefixCache struct {
	byHash     map[uint64]int32
	ent        []centry
	freeEnt    []int32
	head, tail int32 // LRU of free cached blocks: evict head, append at tail
	evictable  int   // len of the LRU list
}

func (c *prefixCache) init() {
	c.byHash = make(map[uint64]int32)
	c.head, c.tail = -1, -1
}

func (c *prefixCache) unlink(k int32) {
	e := &c.ent[k]
	if e.prev >= 0 {
		c.ent[e.prev].next = e.next
	} else {
		c.head = e.next
	}
	if e.next >= 0 {
		c.ent[e.next].prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = -1, -1
	c.evictable--
}

func (c *prefixCache) pushTail(k int32) {
	e := &c.ent[k]
	e.prev, e.next = c.tail, -1
	if c.tail >= 0 {
		c.ent[c.tail].next = k
	} else {
		c.head = k
	}
	c.tail = k
	c.evictable++
}

// evictHead drops the least recently freed cached block; its memory becomes
// a plain free block of the caller.
func (c *prefixCache) evictHead() {
	k := c.head
	c.unlink(k)
	delete(c.byHash, c.ent[k].hash)
	c.freeEnt = append(c.freeEnt, k)
}

// add caches a block just computed with hash h, held by one request.
func (c *prefixCache) add(h uint64) int32 {
	k := takeSlot(&c.ent, &c.freeEnt)
	c.ent[k] = centry{hash: h, ref: 1, prev: -1, next: -1}
	c.byHash[h] = k
	return k
}

// mix64 is SplitMix64's finalizer: a cheap, well-spread 64-bit hash step.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// cursor walks a request's content block by block.
type cursor struct {
	seg   int32 // index into the content (prompt segments, then the output)
	off   int32 // tokens of that segment already passed
	chain uint64
	ended bool // met unique content: no later block has a hash
}

// content returns segment i of r's whole sequence (prompt, then answer).
// Past the named segments a preempted request's own tokens (its answer)
// are one more segment of its own content.
func (r *req) content(i int32) (Segment, bool) {
	if int(i) < len(r.segs) {
		return r.segs[i], true
	}
	if int(i) == len(r.segs) && r.ownID != 0 {
		return Segment{ID: r.ownID ^ 2, Tokens: math.MaxInt32}, true
	}
	return Segment{}, false
}

// nextBlock returns the hash of the block at the cursor and advances it; ok
// is false (and the cursor ends) when the block holds unique content.
func (r *req) nextBlock(c *cursor) (uint64, bool) {
	if c.ended {
		return 0, false
	}
	h := c.chain
	need := int32(BlockTokens)
	for need > 0 {
		s, ok := r.content(c.seg)
		if ok && s.ID == 0 {
			s.ID = r.ownID // 0 unless the request was preempted
		}
		if !ok || s.ID == 0 {
			c.ended = true
			return 0, false
		}
		n := min(need, s.Tokens-c.off)
		h = mix64(h ^ mix64(s.ID))
		h = mix64(h + uint64(c.off)<<32 | uint64(n))
		need -= n
		if c.off += n; c.off == s.Tokens {
			c.seg++
			c.off = 0
		}
	}
	c.chain = h
	return h, true
}

// setContent copies a request's content into its slot, capped at its
// length: unique prompt tokens after the named ones, then the answer tokens
// not named, as outputID.
func (r *req) setContent(content []Segment, outputID uint64) {
	r.segs = r.segs[:0]
	total := r.prompt + r.output
	named := int32(0)
	for _, s := range content {
		if named == total {
			break
		}
		s.Tokens = min(s.Tokens, total-named)
		if s.Tokens <= 0 {
			continue
		}
		named += s.Tokens
		r.segs = append(r.segs, s)
	}
	if named < r.prompt {
		r.segs = append(r.segs, Segment{Tokens: r.prompt - named}) // unique rest
		named = r.prompt
	}
	if named < total && outputID != 0 {
		r.segs = append(r.segs, Segment{ID: outputID, Tokens: total - named})
	}
}

// lookup finds how many leading blocks of waiting request r are cached,
// without changing anything: it leaves the hit entries in e.hits, the
// cursor after them, and how many of them are free (evictable) now.
func (e *Engine) lookup(r *req) (cur cursor, freeHits int) {
	e.hits = e.hits[:0]
	if r.cur.ended {
		return r.cur, 0
	}
	// vLLM computes at least the last token, so the hit stops short of it.
	maxBlocks := (r.numTokens() - 1) / BlockTokens
	for int32(len(e.hits)) < maxBlocks {
		next := cur
		h, ok := r.nextBlock(&next)
		if !ok {
			break
		}
		k, found := e.pc.byHash[h]
		if !found {
			break
		}
		cur = next
		e.hits = append(e.hits, k)
		if e.pc.ent[k].ref == 0 {
			freeHits++
		}
	}
	return cur, freeHits
}

// takeBlocks gives r n new blocks, evicting cached free blocks when the
// plain free ones run out; the caller checked n <= available.
func (e *Engine) takeBlocks(r *req, n int) {
	from := min(n, e.freeBlocks)
	e.freeBlocks -= from
	for range n - from {
		e.pc.evictHead()
	}
	r.blocks += int32(n)
}

// available is the number of blocks a request can get now.
func (e *Engine) available() int { return e.freeBlocks + e.pc.evictable }

// register caches r's blocks that became full this step.
func (e *Engine) register(r *req) {
	for !r.cur.ended && (r.hashedBlocks+1)*BlockTokens <= r.computed {
		h, ok := r.nextBlock(&r.cur)
		if !ok {
			return
		}
		r.hashedBlocks++
		if _, dup := e.pc.byHash[h]; dup {
			continue // computed twice at once; the first copy serves later hits
		}
		r.cached = append(r.cached, e.pc.add(h))
	}
}

// keepForRecompute caches the full blocks preempted request r computed,
// before dropBlocks frees them: vLLM hashes every full block, unique
// prompts' too, so a request preempted by recompute finds its own blocks
// when it is admitted again, unless they were evicted meanwhile. knee
// hashes unique content only from a request's first preemption on (as
// content named by the request itself, r.ownID), so that runs without
// preemption track no block they could not share.
func (e *Engine) keepForRecompute(r *req) {
	if e.cfg.NoPrefixCaching {
		return
	}
	if r.ownID == 0 {
		r.ownID = mix64(uint64(r.id)^0x6a09e667f3bcc909) | 1
		// Walk again to the first unregistered block: the cursor stopped at
		// the unique content, possibly inside a block.
		r.cur = cursor{}
		for range r.hashedBlocks {
			r.nextBlock(&r.cur)
		}
	}
	e.register(r) // blocks it holds become cached ones; dropBlocks frees both kinds
}

// dropBlocks returns all of r's blocks: plain ones to the free count, cached
// ones to the LRU list (tail first, so a prompt's head outlives its tail).
func (e *Engine) dropBlocks(r *req) {
	e.releaseLoRA(r) // every path that frees a request's blocks ends its batch membership
	e.freeBlocks += int(r.blocks) - len(r.cached) + int(r.winBlocks)
	r.winBlocks = 0
	for j := len(r.cached) - 1; j >= 0; j-- {
		k := r.cached[j]
		if e.pc.ent[k].ref--; e.pc.ent[k].ref == 0 {
			e.pc.pushTail(k)
		}
	}
	r.blocks = 0
	r.cached = r.cached[:0]
	r.hashedBlocks = 0
	r.cur = cursor{ended: e.cfg.NoPrefixCaching}
}

// PrefixHasher names a prompt's blocks as the prefix cache does, for a
// router that scores replicas by the prefix their caches hold (llm-d's
// precise prefix-cache scorer reads the same hashes from vLLM's KV events).
// The zero value is ready; it reuses its buffers and is not safe for
// concurrent use.
type PrefixHasher struct{ r req }

// Hashes appends to dst the chained hashes of the prompt's leading full
// blocks of shareable content, as many as a lookup could hit (never the
// block holding the last prompt token).
func (h *PrefixHasher) Hashes(prompt []Segment, inputTokens int, dst []uint64) []uint64 {
	h.r.prompt, h.r.output, h.r.generated = int32(inputTokens), 0, 0
	h.r.setContent(prompt, 0)
	var c cursor
	for n := (inputTokens - 1) / BlockTokens; n > 0; n-- {
		hash, ok := h.r.nextBlock(&c)
		if !ok {
			break
		}
		dst = append(dst, hash)
	}
	return dst
}

// CachedPrefixBlocks is how many of the leading hashes (from
// PrefixHasher.Hashes) the engine's cache holds now, in use or free.
func (e *Engine) CachedPrefixBlocks(hashes []uint64) int {
	for i, h := range hashes {
		if _, ok := e.pc.byHash[h]; !ok {
			return i
		}
	}
	return len(hashes)
}

// takeSlot returns a free index of items (one listed in free), or appends
// an element and returns its index.
func takeSlot[T any](items *[]T, free *[]int32) int32 {
	if n := len(*free); n > 0 {
		k := (*free)[n-1]
		*free = (*free)[:n-1]
		return k
	}
	var zero T
	*items = append(*items, zero)
	return int32(len(*items) - 1)
}
