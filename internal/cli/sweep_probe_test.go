package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// sweepStepsJSON is what these tests read of sweep.json's steps.
type sweepStepsJSON struct {
	Steps []struct {
		Load          float64  `json:"load"`
		Requests      int      `json:"requests"`
		ProbeTTFTP95  *float64 `json:"probe_ttft_p95_ms"`
		Oversaturated string   `json:"oversaturated"`
		Summary       struct {
			TTFT struct {
				Count int `json:"count"`
			} `json:"ttft_ms"`
		} `json:"summary"`
	} `json:"steps"`
	Notes []string `json:"notes"`
}

func readSweepSteps(t *testing.T, dir string) (sweepStepsJSON, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r sweepStepsJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	md, err := os.ReadFile(filepath.Join(dir, "sweep.md"))
	if err != nil {
		t.Fatal(err)
	}
	return r, string(md)
}
