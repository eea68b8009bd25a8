package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/knee-dev/knee/internal/diagnose"
)

// TestDiagnoseMixSaysWhichClassSuffers: two adapters sharing one adapter
// slot (--max-loras 1) make an adapter's class wait where the base model's
// does not; diagnose names that class and the adapter slot as why. With a
// slot for each adapter no class stands out, and without the mix file
// (no adapter known) the same wait reads as queue.
func TestDiagnoseMixSaysWhichClassSuffers(t *testing.T) {
	run := func(loras string) string {
		dir := t.TempDir()
		code, _, stderr := kneeCmd(t, "sim", "--mix", mixExample, "--rate", "8", "--requests", "600", "--max-loras", loras,
			"--no-store", "--quiet", "--out", dir)
		if code != ExitOK && code != ExitSLO {
			t.Fatalf("sim --max-loras %s: exit %d: %s", loras, code, stderr)
		}
		return filepath.Join(dir, "records.jsonl")
	}
	diag := func(args ...string) diagnose.ClassDiagnosis {
		t.Helper()
		code, out, stderr := kneeCmd(t, append([]string{"diagnose", "--json"}, args...)...)
		if code != ExitOK {
			t.Fatalf("diagnose %v: exit %d: %s", args, code, stderr)
		}
		var d diagnose.Diagnosis
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		if d.Classes == nil || len(d.Classes.Classes) != 3 {
			t.Fatalf("diagnose %v: classes %+v; want the three classes", args, d.Classes)
		}
		return *d.Classes
	}
	oneSlot := run("1")
	d := diag(oneSlot, "--mix", mixExample)
	if d.Suffers != "sql" && d.Suffers != "summarize" || d.Cause != diagnose.CauseLoRAWait {
		t.Errorf("one adapter slot: suffers %q because %q (%s); want an adapter's class waiting for its slot", d.Suffers, d.Cause, d.Text)
	}
	if got := []string{d.Classes[0].Class, d.Classes[1].Class, d.Classes[2].Class}; got[0] != "chat" || got[1] != "summarize" || got[2] != "sql" {
		t.Errorf("classes in order %v; want the mix file's", got)
	}
	if d.Classes[0].Cause == diagnose.CauseLoRAWait {
		t.Error("the base model's class cannot wait for an adapter slot")
	}
	if d := diag(oneSlot); d.Cause == diagnose.CauseLoRAWait || d.Suffers == "" {
		t.Errorf("without the mix file: suffers %q because %q; want the class named, its cause not an adapter slot (unknown)", d.Suffers, d.Cause)
	}
	if d := diag(run("2"), "--mix", mixExample); d.Suffers != "" {
		t.Errorf("a slot for each adapter: %q suffers because %q (%s); want no class standing out", d.Suffers, d.Cause, d.Text)
	}
}
