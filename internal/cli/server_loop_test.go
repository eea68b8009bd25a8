package cli

import (
	"strings"
	"testing"
)

// --server-chunk-cost models the server's streaming loop: 32 streams that
// want ~4,600 chunks a second from a loop that sends 1,000 get their tokens
// several to a chunk, so there are fewer chunks than tokens and the mean
// ITL (per chunk) is several times the mean TPOT (per token), as vLLM's
// API server shows when it falls behind; without it every token is its own
// chunk. knee sim sweep takes the flag too, and bad values exit 2.
func TestServerChunkCostFlag(t *testing.T) {
	run := func(args ...string) (chunks, multi int, itl, tpot float64, notes []string) {
		t.Helper()
		var s struct {
			Chunks int                    `json:"chunks"`
			Multi  int                    `json:"multi_token_chunks"`
			ITL    struct{ Mean float64 } `json:"itl_ms"`
			TPOT   struct{ Mean float64 } `json:"tpot_ms"`
			Notes  []string               `json:"notes"`
		}
		simJSON(t, &s, append([]string{"--concurrency", "32", "--requests", "64", "--input-tokens", "64", "--output-tokens", "64"}, args...)...)
		return s.Chunks, s.Multi, s.ITL.Mean, s.TPOT.Mean, s.Notes
	}
	chunks, multi, itl, tpot, notes := run("--server-chunk-cost", "1ms")
	idealChunks, idealMulti, _, _, _ := run()
	t.Logf("--server-chunk-cost 1ms: %d chunks (%d multi-token), ITL %.1f ms, TPOT %.2f ms; without: %d chunks", chunks, multi, itl, tpot, idealChunks)
	if idealChunks != 32*2*64 || idealMulti != 0 {
		t.Fatalf("without the loop: %d chunks, %d multi-token; want one chunk per token", idealChunks, idealMulti)
	}
	if chunks > idealChunks/2 || multi == 0 || itl < 2*tpot {
		t.Errorf("with the loop: %d chunks, %d multi-token, ITL %.1f ms against TPOT %.2f ms: want the waiting tokens merged", chunks, multi, itl, tpot)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "server streaming loop modelled (server_chunk_cost 1ms)") {
		t.Errorf("no note on the modelled loop: %q", notes)
	}
	if code, _, errs := kneeCmd(t, "sim", "sweep", "--rate", "5,10", "--requests", "20", "--server-chunk-cost", "100us", "--seed", "1", "--quiet", "--no-store"); code != 0 {
		t.Errorf("sim sweep --server-chunk-cost 100us: exit %d: %s", code, errs)
	}
	for _, args := range [][]string{
		{"sim", "--server-chunk-cost", "-1ms"},
		{"sim", "sweep", "--rate", "5", "--server-chunk-cost", "-1ms"},
		{"sim", "--server-chunk-cost", "1ms", "--client-chunk-cost", "1ms"},
	} {
		if code, _, errs := kneeCmd(t, append(args, "--requests", "2")...); code != ExitUsage || !strings.Contains(errs, "--server-chunk-cost") {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
}
