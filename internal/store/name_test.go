package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/stats"
)

// TestRunNames: a run begun with a name keeps it, is found by it, and no
// second run takes it; unnamed runs never match a lookup.
func TestRunNames(t *testing.T) {
	st := openT(t, tempDB(t))
	begin := func(name string) (int64, error) {
		w, err := st.BeginRun(RunMeta{Kind: KindBench, Name: name})
		if err != nil {
			return 0, err
		}
		if err := w.Finish(stats.Summary{}, StatusComplete); err != nil {
			t.Fatal(err)
		}
		return w.ID(), nil
	}
	if _, err := begin(""); err != nil {
		t.Fatal(err)
	}
	id, err := begin("nightly")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.ResolveID("nightly"); err != nil || got != id {
		t.Errorf("ResolveID(nightly) = %d, %v; want %d", got, err, id)
	}
	if info, err := st.Run(id); err != nil || info.Name != "nightly" {
		t.Errorf("Run(%d).Name = %+v, %v; want nightly", id, info, err)
	}
	if _, err := begin("nightly"); !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), "run 2") {
		t.Errorf("a second run named nightly: %v, want ErrNameTaken naming run 2", err)
	}
	if list, _ := st.ListRuns(Filter{}); len(list) != 2 {
		t.Errorf("the refused run was stored: %d runs", len(list))
	}
	if _, err := st.ResolveID("weekly"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ResolveID(weekly): %v, want ErrNotFound", err)
	}
}
