package cli

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/knee-dev/knee/internal/ingest"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/spf13/cobra"
)

// newImportCmd is knee import: it stores a vLLM bench serve result or a knee records.jsonl as a
// run (the format is detected from the content; internal/runs stores it).
func newImportCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "import")
	fs := cmd.Flags()
	db := dbFlag(fs)
	var o runs.Import
	fs.StringVar(&o.Label, "label", "", "label for the imported run (default: the file's own label, if any)")
	fs.StringVar(&o.Model, "model", "", "model name (overrides what the file says)")
	fs.StringVar(&o.Target, "target", "", "what was measured (default: what the file says, else the file name)")
	asJSON := fs.Bool("json", false, "print the new run ids as JSON")
	cmd.Long = "Usage: knee import FILE [--label L]   (FILE: a vLLM bench serve result JSON, GuideLLM benchmarks.json, AIPerf profile_export_aiperf.json,\n       an inference-perf stage_N_lifecycle_metrics.json, or knee records.jsonl; - for stdin)"
	cmd.RunE = func(c *cobra.Command, pos []string) error {
		if len(pos) != 1 {
			return Usagef("want one file: knee import FILE, got %d arguments", len(pos))
		}
		o.Path, o.Version = pos[0], Version
		o.Say = func(msg string) { fmt.Fprintf(env.Stderr, "knee import: %s\n", msg) }
		in, err := openText(c.Context(), env, o.Path, importWant)
		if err != nil {
			return err
		}
		defer in.Close()
		o.Size = in.Size
		hash := sha256.New()
		br := bufio.NewReaderSize(in, importHeadBytes)
		head, _ := br.Peek(importHeadBytes)
		src := io.TeeReader(br, hash)
		var out []runs.Imported
		if format, err := ingest.Detect(head); err == nil && format == ingest.FormatRecords {
			// knee's own records can be any length: stored as read.
			st, err := openDB(env, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			one, err := o.Stream(st, src, hash)
			if err != nil {
				return err
			}
			out = append(out, one)
		} else {
			data, err := ingest.ReadWhole(o.Path, in.Size, src)
			if err != nil {
				return err
			}
			// Parse everything before touching the database: a malformed file
			// stores nothing.
			parsed, err := ingest.Read(data)
			if err != nil {
				return Usagef("%s: %v", o.Path, err)
			}
			for i := range parsed {
				for _, w := range parsed[i].Warnings {
					o.Say(fmt.Sprintf("warning: %s: %s", o.Path, w))
				}
			}
			st, err := openDB(env, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			if out, err = o.Parsed(st, parsed, hex.EncodeToString(hash.Sum(nil))); err != nil {
				return err
			}
		}
		if *asJSON {
			return json.NewEncoder(env.Stdout).Encode(out)
		}
		for _, r := range out {
			what := fmt.Sprintf("%d per-request records", r.Records)
			if r.Records == 0 {
				what = "summary only, no per-request records"
			}
			fmt.Fprintf(env.Stdout, "imported %s as run %d (%s, %d requests, %s)\n", o.Path, r.ID, r.Format, r.Requests, what)
		}
		return nil
	}
	return cmd
}

// importWant is what knee import reads, for messages.
const importWant = "a vLLM bench serve result JSON, GuideLLM benchmarks.json, AIPerf profile_export_aiperf.json, an inference-perf stage_N_lifecycle_metrics.json, or a knee records.jsonl"

// importHeadBytes is how much of a file is looked at to tell its format.
const importHeadBytes = 1 << 20

// readImport opens and reads a whole result file, checked first as
// openText does (sweep --from reads its files this way).
func readImport(ctx context.Context, env *Env, path string) ([]byte, error) {
	in, err := openText(ctx, env, path, importWant)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	return ingest.ReadWhole(path, in.Size, in)
}
