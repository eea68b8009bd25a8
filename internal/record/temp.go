package record

import "os"

// WriteTemp writes recs to a new records file in dir and returns its path:
// where a run keeps its records when it could store them nowhere else. On
// an error nothing is left behind.
func WriteTemp(dir string, recs []Request) (string, error) {
	f, err := os.CreateTemp(dir, "knee-records-*.jsonl")
	if err != nil {
		return "", err
	}
	w := NewWriter(f)
	for i := range recs {
		if err = w.Write(&recs[i]); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
