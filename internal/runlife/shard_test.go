package runlife

import (
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/cluster"
	"github.com/knee-dev/knee/internal/store"
)

func TestShardResolve(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == cluster.IndexEnv {
				return v
			}
			return ""
		}
	}
	ok := Shard{Count: 3, Index: -1, RunName: "r", Timeout: 1}
	if err := ok.Resolve(env("2"), true, false); err != nil || ok.Index != 2 || ok.Spec.Index != 2 || ok.Spec.Count != 3 {
		t.Errorf("index from $%s: %v, index %d spec %+v", cluster.IndexEnv, err, ok.Index, ok.Spec)
	}
	for _, c := range []struct {
		s                 Shard
		index             string
		seedGiven, noStor bool
		want              string
	}{
		{Shard{Count: 0}, "", true, false, "--shards 0: want 1 or more"},
		{Shard{Count: 1, Index: 2}, "", true, false, "--shard goes with --shards N"},
		{Shard{Count: 1, Index: -1, RunName: "r"}, "", true, true, "--run-name names the stored run, and --no-store stores none"},
		{Shard{Count: 3, Index: -1, RunName: "r", Timeout: 1}, "", true, false, "want this process's index"},
		{Shard{Count: 3, Index: -1, RunName: "r", Timeout: 1}, "x", true, false, `=\"x\": want a shard index`},
		{Shard{Count: 3, Index: 3, RunName: "r", Timeout: 1}, "", true, false, "--shard:"},
		{Shard{Count: 3, Index: 0, Timeout: 1}, "", true, false, "want --run-name"},
		{Shard{Count: 3, Index: 0, RunName: "r", Timeout: 1}, "", false, false, "want --seed"},
		{Shard{Count: 3, Index: 0, RunName: "r", Timeout: 1}, "", true, true, "--shards and --no-store"},
		{Shard{Count: 3, Index: 0, RunName: "r"}, "", true, false, "--shard-timeout 0s"},
	} {
		err := c.s.Resolve(env(c.index), c.seedGiven, c.noStor)
		if !badinput.Is(err) || !strings.Contains(err.Error(), strings.ReplaceAll(c.want, `\"`, `"`)) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
}

func TestShardRefusesUnsplittableLoads(t *testing.T) {
	t.Parallel()
	s := Shard{Count: 4}
	for _, c := range []struct {
		url      string
		users    float64
		requests int64
		want     string
	}{
		{"", 0, 0, "want --url"},
		{"http://x", 3, 0, "--concurrency 3 leaves a shard without a user"},
		{"http://x", 0, 2, "--requests 2 leaves a shard without a request"},
		{"http://x", 4, 4, ""},
	} {
		err := s.RefuseUnsplittable(c.url, c.users, c.requests)
		if c.want == "" && err != nil || c.want != "" && (!badinput.Is(err) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q %g users %d requests: %v, want %q", c.url, c.users, c.requests, err, c.want)
		}
	}
	if err := (&Shard{Count: 1}).RefuseUnsplittable("", 1, 1); err != nil {
		t.Errorf("one shard: %v", err)
	}
}

func TestMissingShards(t *testing.T) {
	t.Parallel()
	shards := []store.ShardInfo{{Index: 0, Status: store.StatusComplete}, {Index: 2, Status: store.StatusInterrupted}}
	if got := MissingShards(shards, 3); strings.Join(got, ",") != "1,2" {
		t.Errorf("missing %q, want 1 and 2", got)
	}
}
