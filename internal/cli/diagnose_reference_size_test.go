package cli

import (
	"runtime"
	"testing"

	"github.com/knee-dev/knee/internal/badinput/badinputtest"
)

// A huge file where summary.json is looked for beside the records is not
// one, and is not read into memory to find that out.
func TestDiagnoseSummaryConfigBounded(t *testing.T) {
	p := badinputtest.OversizeFile(t, "summary.json", maxSummaryBytes)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cfg := summaryConfig(p)
	runtime.ReadMemStats(&after)
	if cfg != nil {
		t.Errorf("config %v from a file of zeros", cfg)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("reading it allocated %d bytes; want it refused unread", grew)
	}
}
