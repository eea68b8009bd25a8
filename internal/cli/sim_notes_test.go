package cli

import (
	"strings"
	"testing"
)

// TestSimRecordsNotesTruthful: a --duration simulation says truthfully why
// it stored no records, a --requests one stores them, and knee records
// says which runs keep them.
func TestSimRecordsNotesTruthful(t *testing.T) {
	env := benchEnv(t)
	code, stdout, stderr := kneeEnv(t, env, "sim", "--rate", "5", "--duration", "10s", "--seed", "1", "--quiet", "--detail")
	if code != ExitOK {
		t.Fatalf("sim --duration: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "per-request records are stored for runs of at most") || !strings.Contains(stdout, "--requests sizes it") {
		t.Errorf("sim --duration's note does not say why its records were not stored:\n%s", stdout)
	}
	_, _, stderr = kneeEnv(t, env, "records", "last")
	if !strings.Contains(stderr, "--duration run keeps none") {
		t.Errorf("knee records of a --duration sim:\n%s", stderr)
	}
	if code, _, stderr := kneeEnv(t, env, "sim", "--rate", "5", "--requests", "20", "--seed", "1", "--quiet"); code != ExitOK {
		t.Fatalf("sim --requests: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = kneeEnv(t, env, "records", "last")
	if code != ExitOK || strings.Count(stdout, "\n") != 20 {
		t.Errorf("knee records of a --requests 20 sim: exit %d, %d lines:\n%s", code, strings.Count(stdout, "\n"), stderr)
	}
}
