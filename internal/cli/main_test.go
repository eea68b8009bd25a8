package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestMainEnvSerializesStderr: a subcommand writes its stderr from several
// goroutines (the progress display, a shard's outage messages). The Env a
// subcommand gets from MainEnv must take those writes one at a time, even
// when the caller's writer (a bytes.Buffer here, as in every test) does
// not: under -race this was a DATA RACE, and lines could be lost.
func TestMainEnvSerializesStderr(t *testing.T) {
	var errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &errb}
	if code := MainEnv(context.Background(), env, []string{"version"}); code != ExitOK {
		t.Fatalf("knee version: exit %d: %s", code, errb.String())
	}
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(env.Stderr, "writer %d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines on stderr, want %d", len(got), writers*lines)
	}
	seen := map[string]bool{}
	for _, l := range got {
		seen[l] = true
	}
	for g := range writers {
		for i := range lines {
			if l := fmt.Sprintf("writer %d line %d", g, i); !seen[l] {
				t.Fatalf("line %q lost or torn", l)
			}
		}
	}
}
