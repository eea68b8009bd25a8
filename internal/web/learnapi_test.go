package web

import (
	"context"
	"testing"
)

// TestLearnClaimsHoldInEngine runs every claim the Learn page states on
// knee's engine at the page's own settings: the direction it claims must
// hold, by the margin it claims.
func TestLearnClaimsHoldInEngine(t *testing.T) {
	n := 0
	for _, s := range learnSections {
		for _, c := range s.Claims {
			n++
			got, err := c.check(context.Background(), s)
			if err != nil {
				t.Fatalf("%s/%s: %v", s.ID, c.ID, err)
			}
			t.Logf("%s/%s: %s %s (want ≥ %v, ≤ %v)", s.ID, c.ID, c.Metric, got, c.AtLeast, c.AtMost)
			if !got.Holds {
				t.Errorf("%s/%s does not hold in the engine: %q\n%s/%s: %s (want at least %v, at most %v)",
					s.ID, c.ID, c.Text, c.Metric, c.Over, got, c.AtLeast, c.AtMost)
			}
		}
	}
	if n < 6 {
		t.Errorf("only %d claims checked", n)
	}
}
