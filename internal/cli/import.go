package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/knee-dev/knee/internal/ingest"
	"github.com/knee-dev/knee/internal/store"
	"github.com/spf13/cobra"
)

// maxImportBytes bounds what knee import reads into memory.
const maxImportBytes = 2 << 30

// newImportCmd is knee import: it stores a vLLM bench serve result or a knee records.jsonl as a
// run (the format is detected from the content).
func newImportCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "import")
	fs := cmd.Flags()
	db := dbFlag(fs)
	label := fs.String("label", "", "label for the imported run (default: the file's own label, if any)")
	model := fs.String("model", "", "model name (overrides what the file says)")
	target := fs.String("target", "", "what was measured (default: what the file says, else the file name)")
	asJSON := fs.Bool("json", false, "print the new run ids as JSON")
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee import FILE [--label L]   (FILE: a vLLM bench serve result JSON, GuideLLM benchmarks.json, AIPerf profile_export_aiperf.json,")
		fmt.Fprintln(w, "       an inference-perf stage_N_lifecycle_metrics.json, or knee records.jsonl; - for stdin)")
	})
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if len(pos) != 1 {
			return Usagef("want one file: knee import FILE, got %d arguments", len(pos))
		}
		path := pos[0]
		data, err := readImport(env, path)
		if err != nil {
			return err
		}
		// Parse everything before touching the database: a malformed file
		// stores nothing.
		runs, err := ingest.Read(data)
		if err != nil {
			return Usagef("%s: %v", path, err)
		}
		st, err := openDB(env, *db)
		if err != nil {
			return err
		}
		defer st.Close()

		type imported struct {
			ID       int64  `json:"id"`
			Format   string `json:"format"`
			Requests int    `json:"requests"`
			Records  int    `json:"records"`
		}
		var out []imported
		for i := range runs {
			r := &runs[i]
			meta := store.RunMeta{Kind: store.KindImport, Label: r.Label, Model: r.Model, Target: r.Target, Version: Version, Start: r.Start}
			if meta.Label == "" {
				meta.Label = r.Source // one of several runs in the file (GuideLLM: its benchmark)
			}
			if *label != "" {
				meta.Label = *label
			}
			if *model != "" {
				meta.Model = *model
			}
			if *target != "" {
				meta.Target = *target
			}
			if meta.Target == "" {
				meta.Target = filepath.Base(path)
			}
			cfg := [][2]string{{"imported_from", path}, {"format", r.Format}}
			if r.Source != "" {
				cfg = append(cfg, [2]string{"run", r.Source})
			}
			switch {
			case r.Concurrency > 0 && r.RateRPS > 0:
				cfg = append(cfg, [2]string{"load", fmt.Sprintf("%g req/s, at most %g in flight", r.RateRPS, r.Concurrency)})
			case r.Concurrency > 0:
				cfg = append(cfg, [2]string{"load", fmt.Sprintf("%g in flight", r.Concurrency)})
			case r.RateRPS > 0:
				cfg = append(cfg, [2]string{"load", fmt.Sprintf("%g req/s", r.RateRPS)})
			}
			cfg = append(cfg, r.Config...)
			sum, missing := ingest.StorableSummary(r.Summary)
			notes := r.Notes
			if len(missing) > 0 {
				notes = append(notes, "not in the file (shown as 0): "+strings.Join(missing, ", "))
			}
			for _, n := range notes {
				cfg = append(cfg, [2]string{"note", n})
			}
			meta.Config = pairsJSON(cfg)
			id, err := st.ImportRun(meta, r.Records, &sum, store.StatusComplete)
			if err != nil {
				return fmt.Errorf("storing %s: %w", path, err)
			}
			out = append(out, imported{ID: id, Format: r.Format, Requests: r.Summary.Requests, Records: len(r.Records)})
		}
		if *asJSON {
			return json.NewEncoder(env.Stdout).Encode(out)
		}
		for _, o := range out {
			what := fmt.Sprintf("%d per-request records", o.Records)
			if o.Records == 0 {
				what = "summary only, no per-request records"
			}
			fmt.Fprintf(env.Stdout, "imported %s as run %d (%s, %d requests, %s)\n", path, o.ID, o.Format, o.Requests, what)
		}
		return nil
	}
	return cmd
}

func readImport(env *Env, path string) ([]byte, error) {
	var rd io.Reader
	if path == "-" {
		rd = env.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, Usagef("%v", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return nil, Usagef("%s is a directory: want one result file (vLLM, GuideLLM, AIPerf, inference-perf JSON) or a records.jsonl", path)
		}
		rd = f
	}
	data, err := io.ReadAll(io.LimitReader(rd, maxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxImportBytes {
		return nil, Usagef("%s is larger than %d GiB", path, maxImportBytes>>30)
	}
	return data, nil
}
