package store

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestServerSeriesRoundTrip(t *testing.T) { eachDialect(t, testServerSeriesRoundTrip) }

func testServerSeriesRoundTrip(t *testing.T, db string) {
	st := openT(t, db)
	defer st.Close()
	id, err := st.ImportRun(RunMeta{Kind: KindBench}, nil, nil, StatusComplete)
	if err != nil {
		t.Fatal(err)
	}
	whole := json.RawMessage(`{"server":"vllm","samples":[{"t_ms":0}]}`)
	step := json.RawMessage(`{"server":"vllm","samples":[]}`)
	if err := st.SaveServerSeries(id, WholeRun, json.RawMessage(`{"old":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveServerSeries(id, WholeRun, whole); err != nil { // replaces
		t.Fatal(err)
	}
	if err := st.SaveServerSeries(id, 2, step); err != nil {
		t.Fatal(err)
	}
	got, err := st.ServerSeries(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[WholeRun]) != string(whole) || string(got[2]) != string(step) {
		t.Fatalf("read back %v", got)
	}
	if err := st.SaveServerSeries(id, 0, json.RawMessage(`{`)); err == nil {
		t.Error("invalid JSON stored")
	}
	if err := st.SaveServerSeries(id+100, 0, whole); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
	if err := st.DeleteRun(id); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.ServerSeries(id); len(got) != 0 {
		t.Errorf("series outlived its run: %v", got)
	}
}
