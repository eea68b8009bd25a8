package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
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
	cmd.RunE = func(c *cobra.Command, pos []string) error {
		if len(pos) != 1 {
			return Usagef("want one file: knee import FILE, got %d arguments", len(pos))
		}
		path := pos[0]
		data, err := readImport(c.Context(), env, path)
		if err != nil {
			return err
		}
		// Parse everything before touching the database: a malformed file
		// stores nothing.
		runs, err := ingest.Read(data)
		if err != nil {
			return Usagef("%s: %v", path, err)
		}
		for i := range runs {
			for _, w := range runs[i].Warnings {
				fmt.Fprintf(env.Stderr, "knee import: warning: %s: %s\n", path, w)
			}
		}
		st, err := openDB(env, *db)
		if err != nil {
			return err
		}
		defer st.Close()
		sum := sha256.Sum256(data)
		digest := hex.EncodeToString(sum[:])
		if ids := importedBefore(st, digest); len(ids) > 0 {
			fmt.Fprintf(env.Stderr, "knee import: note: %s has the same content as run(s) %s imported before; storing it again as new run(s)\n", path, strings.Join(ids, ", "))
		}

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
			cfg := [][2]string{{"imported_from", path}, {"format", r.Format}, {"file_sha256", digest}}
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
			notes := append(r.Notes, r.Warnings...)
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

// importedBefore lists the ids of imported runs whose file had this
// content (sha256): importing a file twice is worth saying.
func importedBefore(st *store.Store, digest string) []string {
	runs, err := st.ListRuns(store.Filter{Kind: store.KindImport})
	if err != nil {
		return nil
	}
	var ids []string
	for _, r := range runs {
		if bytes.Contains(r.Config, []byte(`"file_sha256":"`+digest+`"`)) {
			ids = append(ids, strconv.FormatInt(r.ID, 10))
		}
	}
	return ids
}

// importWant is what knee import reads, for messages.
const importWant = "a vLLM bench serve result JSON, GuideLLM benchmarks.json, AIPerf profile_export_aiperf.json, an inference-perf stage_N_lifecycle_metrics.json, or a knee records.jsonl"

// readImport reads the file whole (its format is detected from it), after
// checking that it is a text file within maxImportBytes: a folder, a binary
// file or one too large is refused before it is read.
func readImport(ctx context.Context, env *Env, path string) ([]byte, error) {
	in, err := openText(ctx, env, path, importWant)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if in.size > maxImportBytes {
		return nil, Usagef("%s is larger than %d GiB (%d bytes): split it", path, maxImportBytes>>30, in.size)
	}
	data, err := io.ReadAll(io.LimitReader(in, maxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxImportBytes {
		return nil, Usagef("%s is larger than %d GiB", path, maxImportBytes>>30)
	}
	return data, nil
}
