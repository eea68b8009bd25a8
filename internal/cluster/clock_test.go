package cluster

import (
	"context"
	"testing"
	"time"
)

// A server 3 s ahead, reached over legs of varying delay: the round trip
// kept is the shortest, and the true offset lies within its uncertainty.
func TestMeasureOffsetKeepsShortestRoundTrip(t *testing.T) {
	const trueOffset = 3 * time.Second
	local := time.Unix(1000, 0)
	// (outbound, return) delays of each sample; the third is the shortest.
	legs := [][2]time.Duration{{40 * time.Millisecond, 2 * time.Millisecond}, {5 * time.Millisecond, 30 * time.Millisecond},
		{1 * time.Millisecond, 3 * time.Millisecond}, {20 * time.Millisecond, 20 * time.Millisecond}}
	k := 0
	now := func() time.Time { return local }
	server := func(context.Context) (time.Time, error) {
		l := legs[k]
		k++
		local = local.Add(l[0])
		s := local.Add(trueOffset)
		local = local.Add(l[1])
		return s, nil
	}
	c, err := MeasureOffset(context.Background(), len(legs), now, server)
	if err != nil {
		t.Fatal(err)
	}
	if c.RoundTrip != 4*time.Millisecond || c.Uncertainty != 2*time.Millisecond || c.Samples != 4 {
		t.Errorf("kept %+v, want the 4 ms round trip", c)
	}
	if d := c.Offset - trueOffset; d < -c.Uncertainty || d > c.Uncertainty {
		t.Errorf("offset %v, true %v ± %v", c.Offset, trueOffset, c.Uncertainty)
	}
	// 1 ms out, 3 ms back: the midpoint guess is 1 ms late.
	if c.Offset != trueOffset-time.Millisecond {
		t.Errorf("offset %v, want %v", c.Offset, trueOffset-time.Millisecond)
	}
	if got := c.ToLocal(c.ToServer(local)); !got.Equal(local) {
		t.Errorf("ToLocal(ToServer(t)) = %v, want %v", got, local)
	}
}
