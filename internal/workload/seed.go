package workload

import (
	crand "crypto/rand"
	"encoding/binary"
	"time"
)

// RandomSeed returns a fresh seed for runs where the user gave no --seed, so
// two runs send different prompts (a server's prefix cache would otherwise
// make the second run's TTFT look better than it is). Record the seed with
// the run so it can be repeated.
func RandomSeed() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; the clock is a
		// fallback that still differs between runs.
		return mix64(uint64(time.Now().UnixNano()))
	}
	return binary.LittleEndian.Uint64(b[:])
}
