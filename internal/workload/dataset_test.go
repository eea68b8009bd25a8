package workload

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadDatasetJSONL(t *testing.T) {
	ds, err := LoadDataset("testdata/prompts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Format != FormatJSONL || len(ds.Entries) != 5 || ds.Skipped != 0 {
		t.Fatalf("format %s, %d entries, %d skipped", ds.Format, len(ds.Entries), ds.Skipped)
	}
	want := []DatasetEntry{
		{Prompt: "Explain how a KV cache works in one paragraph.", OutputTokens: 128, Line: 1},
		{Prompt: "Write a haiku about queues.", OutputTokens: 32, Line: 2},
		{Prompt: "List three prime numbers.", OutputTokens: 16, Line: 4},
		{Prompt: "No output length here: Spec.Output decides.", Line: 5},
		{Prompt: "Hi there, how are you?", Completion: "I am fine, thank you for asking.", HasCompletion: true, Line: 6},
	}
	for k, w := range want {
		if !reflect.DeepEqual(ds.Entries[k], w) {
			t.Errorf("entry %d = %+v, want %+v", k, ds.Entries[k], w)
		}
	}
}

func TestLoadDatasetShareGPT(t *testing.T) {
	ds, err := LoadDataset("testdata/sharegpt.json")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Format != FormatShareGPT || len(ds.Entries) != 3 || ds.Skipped != 1 {
		t.Fatalf("format %s, %d entries, %d skipped", ds.Format, len(ds.Entries), ds.Skipped)
	}
	want := []DatasetEntry{
		{Prompt: "What is the capital of France?", Completion: "The capital of France is Paris.", HasCompletion: true, Line: 2,
			Turns: []DatasetTurn{{Prompt: "And of Italy?", Completion: "Rome."}}}, // the later exchange, for sessions
		{Prompt: "Count to five.", Completion: "1 2 3 4 5", HasCompletion: true, Line: 17},
		{Prompt: "Say hello in Spanish.", Completion: "Hola.", HasCompletion: true, Line: 25},
	}
	for k, w := range want {
		if !reflect.DeepEqual(ds.Entries[k], w) {
			t.Errorf("entry %d = %+v, want %+v", k, ds.Entries[k], w)
		}
	}
}

func TestDatasetErrors(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"bad json", "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"\n", ":2: invalid JSON"},
		{"no prompt", "{\"prompt\": \"a\"}\n\n{\"question\": \"b\"}\n", `:3: no "prompt" (or "text") field`},
		{"empty prompt", `{"prompt": ""}`, ":1: prompt is empty"},
		{"bad output", "{\"prompt\": \"a\", \"output_tokens\": 0}", ":1: output_tokens must be a whole number between 1 and"},
		{"fraction", "{\"prompt\": \"a\", \"max_tokens\": 2.5}", ":1: max_tokens must be a whole number"},
		{"string output", "{\"prompt\": \"a\", \"output_tokens\": \"nine\"}", ":1: invalid JSON"},
		{"two values", "{\"prompt\": \"a\"} {\"prompt\": \"b\"}", ":1: more than one JSON value"},
		{"empty", "\n  \n", "file is empty"},
		{"csv", "prompt,output\nhello,3\n", `starts with "p"; expected JSONL`},
		{"sharegpt syntax", "[\n {\"conversations\": []},\n {\"conversations\": [}\n]", ":3: conversation 1:"},
		{"sharegpt type", "[\n {\"conversations\": \"nope\"}\n]", ":2: conversation 0:"},
		{"sharegpt truncated", "[\n {\"conversations\": []}", "unexpected end of file"},
		{"sharegpt trailing", "[]\n[]", ":2: unexpected data after the array"},
		{"no usable", `[{"conversations": [{"from": "gpt", "value": "x"}]}]`, "no usable prompts (1 conversations skipped"},
	}
	for _, c := range cases {
		p := filepath.Join(t.TempDir(), "data.jsonl")
		os.WriteFile(p, []byte(c.content), 0o644)
		_, err := LoadDataset(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want it to name %s and contain %q", c.name, err, p, c.want)
		}
	}
	if _, err := LoadDataset("testdata/missing.jsonl"); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	// The readers report the line in a typed error for callers that want it.
	_, _, err := ReadPromptsJSONL(strings.NewReader("{\"prompt\":\"a\"}\nnot json\n"))
	var de *DatasetError
	if !errors.As(err, &de) || de.Line != 2 {
		t.Errorf("ReadPromptsJSONL error %v, want DatasetError at line 2", err)
	}
}

func TestDatasetLongLine(t *testing.T) {
	// Lines far beyond bufio.Scanner's 64 KiB default must work.
	long := strings.Repeat("word ", 100_000)
	_, _, err := ReadPromptsJSONL(strings.NewReader(`{"prompt": "` + long + `"}`))
	if err != nil {
		t.Fatal(err)
	}
}

func FuzzReadPromptsJSONL(f *testing.F) {
	seed, _ := os.ReadFile("testdata/prompts.jsonl")
	f.Add(seed)
	f.Add([]byte(`{"prompt": "x", "output_tokens": 1e3}`))
	f.Add([]byte(`{"text": 5}`))
	f.Add([]byte("{}\n{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"\"}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, _, err := ReadPromptsJSONL(bytes.NewReader(data))
		checkEntries(t, entries, err)
	})
}

func FuzzReadShareGPT(f *testing.F) {
	seed, _ := os.ReadFile("testdata/sharegpt.json")
	f.Add(seed)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]}, 5]`))
	f.Add([]byte(`[{"conversations": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, _, err := ReadShareGPT(bytes.NewReader(data))
		checkEntries(t, entries, err)
	})
}

func checkEntries(t *testing.T, entries []DatasetEntry, err error) {
	t.Helper()
	if err != nil {
		var de *DatasetError
		if !errors.As(err, &de) || de.Line < 1 || de.Msg == "" {
			t.Fatalf("error %v is not a DatasetError with a line", err)
		}
		return
	}
	for _, e := range entries {
		if e.Prompt == "" || e.Line < 1 || e.OutputTokens < 0 || e.OutputTokens > MaxLengthTokens {
			t.Fatalf("bad entry %+v", e)
		}
	}
}
