package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/ingest"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
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
		in, err := openText(c.Context(), env, path, importWant)
		if err != nil {
			return err
		}
		defer in.Close()
		hash := sha256.New()
		br := bufio.NewReaderSize(in, importHeadBytes)
		head, _ := br.Peek(importHeadBytes)
		src := io.TeeReader(br, hash)
		opts := importOptions{path: path, label: *label, model: *model, target: *target}
		var out []importedRun
		if format, err := ingest.Detect(head); err == nil && format == ingest.FormatRecords {
			// knee's own records can be any length: stored as read.
			o, err := importRecordsStream(env, *db, src, hash, opts)
			if err != nil {
				return err
			}
			out = append(out, o)
		} else {
			data, err := readImportFrom(path, in.size, src)
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
			digest := hex.EncodeToString(hash.Sum(nil))
			if ids := importedBefore(st, digest, 0); len(ids) > 0 {
				fmt.Fprintf(env.Stderr, "knee import: note: %s has the same content as run(s) %s imported before; storing it again as new run(s)\n", path, strings.Join(ids, ", "))
			}
			for i := range runs {
				r := &runs[i]
				meta, sum := importMeta(r, opts, digest)
				id, err := st.ImportRun(meta, r.Records, &sum, store.StatusComplete)
				if err != nil {
					return fmt.Errorf("storing %s: %w", path, err)
				}
				out = append(out, importedRun{ID: id, Format: r.Format, Requests: r.Summary.Requests, Records: len(r.Records)})
			}
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

// importedRun is what knee import says of each run it stored.
type importedRun struct {
	ID       int64  `json:"id"`
	Format   string `json:"format"`
	Requests int    `json:"requests"`
	Records  int    `json:"records"`
}

// importOptions are the file and the flags that override what it says.
type importOptions struct {
	path, label, model, target string
}

// importMeta is the stored description of an imported run: its names (the
// flags win over the file), configuration and notes; and the summary as
// stored, with what the file lacked noted.
func importMeta(r *ingest.Run, o importOptions, digest string) (store.RunMeta, stats.Summary) {
	meta := store.RunMeta{Kind: store.KindImport, Label: r.Label, Model: r.Model, Target: r.Target, Version: Version, Start: r.Start}
	if meta.Label == "" {
		meta.Label = r.Source // one of several runs in the file (GuideLLM: its benchmark)
	}
	if o.label != "" {
		meta.Label = o.label
	}
	if o.model != "" {
		meta.Model = o.model
	}
	if o.target != "" {
		meta.Target = o.target
	}
	if meta.Target == "" {
		meta.Target = filepath.Base(o.path)
	}
	cfg := [][2]string{{"imported_from", o.path}, {"format", r.Format}}
	if digest != "" {
		cfg = append(cfg, [2]string{"file_sha256", digest})
	}
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
	return meta, sum
}

// importRecordsStream stores a knee records.jsonl while it reads it, a
// batch at a time, so a file of any size is imported in bounded memory. The
// run is stored as running and completed at the end; a file that turns out
// malformed leaves nothing stored (its run is deleted), as the other
// formats, which are parsed whole first.
func importRecordsStream(env *Env, db string, src io.Reader, hash hash.Hash, o importOptions) (importedRun, error) {
	st, err := openDB(env, db)
	if err != nil {
		return importedRun{}, err
	}
	defer st.Close()
	meta, _ := importMeta(&ingest.Run{Format: ingest.FormatRecords}, o, "")
	w, err := st.BeginRun(meta)
	if err != nil {
		return importedRun{}, fmt.Errorf("storing %s: %w", o.path, err)
	}
	n := 0
	var storeErr error
	run, err := ingest.ScanRecords(src, func(r *record.Request) error {
		w.Add(r)
		n++
		// Write each full batch now: the writer's queue must not grow
		// faster than the database takes it.
		if n%store.BatchRecords == 0 {
			if storeErr = w.Flush(); storeErr != nil {
				return storeErr
			}
		}
		return nil
	})
	if err != nil {
		w.Finish(stats.Summary{}, store.StatusFailed)
		if derr := st.DeleteRun(w.ID()); derr != nil {
			fmt.Fprintf(env.Stderr, "knee import: could not remove the partial run %d: %v\n", w.ID(), derr)
		}
		if storeErr != nil {
			return importedRun{}, fmt.Errorf("storing %s: %w", o.path, err)
		}
		return importedRun{}, Usagef("%s: %v", o.path, err)
	}
	for _, warn := range run.Warnings {
		fmt.Fprintf(env.Stderr, "knee import: warning: %s: %s\n", o.path, warn)
	}
	digest := hex.EncodeToString(hash.Sum(nil))
	if ids := importedBefore(st, digest, w.ID()); len(ids) > 0 {
		fmt.Fprintf(env.Stderr, "knee import: note: %s has the same content as run(s) %s imported before; storing it again as new run(s)\n", o.path, strings.Join(ids, ", "))
	}
	meta, sum := importMeta(run, o, digest)
	if err := st.SetConfig(w.ID(), meta.Config); err != nil {
		w.Finish(sum, store.StatusFailed)
		return importedRun{}, fmt.Errorf("storing %s: %w", o.path, err)
	}
	if err := w.Finish(sum, store.StatusComplete); err != nil {
		return importedRun{}, fmt.Errorf("storing %s: %w", o.path, err)
	}
	return importedRun{ID: w.ID(), Format: run.Format, Requests: run.Summary.Requests, Records: n}, nil
}

// importedBefore lists the ids of imported runs other than self whose file
// had this content (sha256): importing a file twice is worth saying.
func importedBefore(st *store.Store, digest string, self int64) []string {
	runs, err := st.ListRuns(store.Filter{Kind: store.KindImport})
	if err != nil {
		return nil
	}
	var ids []string
	for _, r := range runs {
		if r.ID != self && bytes.Contains(r.Config, []byte(`"file_sha256":"`+digest+`"`)) {
			ids = append(ids, strconv.FormatInt(r.ID, 10))
		}
	}
	return ids
}

// importWant is what knee import reads, for messages.
const importWant = "a vLLM bench serve result JSON, GuideLLM benchmarks.json, AIPerf profile_export_aiperf.json, an inference-perf stage_N_lifecycle_metrics.json, or a knee records.jsonl"

// importHeadBytes is how much of a file is looked at to tell its format.
const importHeadBytes = 1 << 20

// readImport reads a whole result file of another tool (their formats are
// single JSON documents), refusing one larger than maxImportBytes before
// reading it when its size is known.
func readImportFrom(path string, size int64, src io.Reader) ([]byte, error) {
	if size > maxImportBytes {
		return nil, Usagef("%s is larger than %d GiB (%d bytes): split it", path, maxImportBytes>>30, size)
	}
	data, err := io.ReadAll(io.LimitReader(src, maxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxImportBytes {
		return nil, Usagef("%s is larger than %d GiB", path, maxImportBytes>>30)
	}
	return data, nil
}

// readImport opens and reads a whole result file, checked first as
// openText does (sweep --from reads its files this way).
func readImport(ctx context.Context, env *Env, path string) ([]byte, error) {
	in, err := openText(ctx, env, path, importWant)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	return readImportFrom(path, in.size, in)
}
