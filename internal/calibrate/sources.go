package calibrate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/ingest"
	"github.com/knee-dev/knee/internal/stats"
)

// Bounds on what calibrate --from reads, whatever the directory holds.
const (
	maxFromFiles     = 2000
	maxFromFileBytes = 512 << 20
	maxFromDepth     = 6
)

// Source is one load step read from measurements made elsewhere, with
// the model its file names.
type Source struct {
	Obs   Observation
	Model string
}

// ReadResults reads a result file, or every result file under a
// directory (files of no known format are skipped and named).
func ReadResults(path string) ([]Source, []string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, badinput.Errorf("--from %s: %v", path, err)
	}
	if !st.IsDir() {
		srcs, err := readResultFile(path)
		return srcs, nil, err
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(path, p); strings.Count(rel, string(filepath.Separator)) >= maxFromDepth {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := strings.ToLower(filepath.Ext(p)); d.Type().IsRegular() && (ext == ".json" || ext == ".jsonl") {
			if len(files) == maxFromFiles {
				return fmt.Errorf("more than %d result files under %s: point --from at fewer", maxFromFiles, path)
			}
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, badinput.Errorf("--from %s: %v", path, err)
	}
	sort.Strings(files)
	var srcs []Source
	var skipped []string
	for _, p := range files {
		got, err := readResultFile(p)
		if errors.Is(err, ingest.ErrUnknownFormat) {
			skipped = append(skipped, p+": not a result file knee reads")
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		srcs = append(srcs, got...)
	}
	if len(srcs) == 0 {
		return nil, skipped, badinput.Errorf("--from %s: no result file knee reads in the directory (%d .json/.jsonl files looked at)", path, len(files))
	}
	return srcs, skipped, nil
}

func readResultFile(path string) ([]Source, error) {
	data, err := badinput.ReadFile(path, maxFromFileBytes, "a result file (knee's, vLLM bench serve's, GuideLLM's, ...)")
	if err != nil {
		return nil, badinput.Errorf("--from %s: %w", path, err)
	}
	runs, err := ingest.Read(data)
	if err != nil {
		return nil, badinput.Errorf("--from %s: %w", path, err) // ErrUnknownFormat stays visible to the directory walk
	}
	var srcs []Source
	for i, r := range runs {
		name := path
		if r.Source != "" {
			name += ": " + r.Source
		} else if len(runs) > 1 {
			name += ": run " + strconv.Itoa(i+1)
		}
		o, err := ObservationOf(name, r.Summary, r.Concurrency, r.RateRPS)
		if err != nil {
			continue // a run with nothing to fit (all failed, no tokens): not an error of the file
		}
		srcs = append(srcs, Source{Obs: o, Model: r.Model})
	}
	return srcs, nil
}

// LoadOfConfig reads a stored run's load: its concurrency or rate as the
// run's configuration records them, else the offered rate of an open loop
// (0, 0: Little's law decides).
func LoadOfConfig(cfg [][2]string, s stats.Summary) (conc, rate float64) {
	for _, kv := range cfg {
		v, err := strconv.ParseFloat(kv[1], 64)
		if err != nil || v <= 0 {
			continue
		}
		switch kv[0] {
		case "concurrency":
			conc = v
		case "rate", "rate_rps":
			rate = v
		}
	}
	if conc == 0 && rate == 0 && s.OfferedRateRPS > 0 {
		rate = s.OfferedRateRPS
	}
	return conc, rate
}
