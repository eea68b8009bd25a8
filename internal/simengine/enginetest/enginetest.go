// Package enginetest is the engine set-up that tests across knee share:
// Llama-3.1-8B on one H100 at the engine's defaults, the deployment knee
// serve and knee sim use when no flag says otherwise. A test that needs
// another deployment changes the returned Config; simengine's own tests,
// which this package cannot serve (it imports simengine), keep theirs in
// simengine's refConfig.
package enginetest

import (
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
)

// H100Llama8B returns the default engine configuration for Llama-3.1-8B
// on tp H100s (tp 1 for one card).
func H100Llama8B(tb testing.TB, tp int) simengine.Config {
	tb.Helper()
	g, err := simengine.LookupGPU("h100")
	if err != nil {
		tb.Fatal(err)
	}
	m, err := simengine.LookupModel("llama-3.1-8b")
	if err != nil {
		tb.Fatal(err)
	}
	return simengine.DefaultConfig(g, m, tp)
}
