package enginesetup

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/sim"
)

func TestClientModel(t *testing.T) {
	var none Client
	if cl, err := none.Model(false, 0); err != nil || cl != (sim.Client{}) || none.Note() != "" || none.ConfigKV() != nil {
		t.Errorf("knee's own client: %+v, %v, note %q", cl, err, none.Note())
	}
	c := Client{ChunkCost: 700 * time.Microsecond, Gap: time.Second}
	cl, err := c.Model(true, time.Minute)
	if err != nil || cl.ChunkCost != c.ChunkCost || cl.Gap != time.Second {
		t.Errorf("closed loop: %+v, %v", cl, err)
	}
	if !strings.HasPrefix(c.Note(), "client modelled (client_chunk_cost 700µs, client_gap 1s)") {
		t.Errorf("note %q", c.Note())
	}
	for _, tc := range []struct {
		c          Client
		closedLoop bool
		want       string
	}{
		{Client{Gap: -time.Second}, true, "--client-gap -1s: want a duration of 0 or more"},
		{Client{Start: time.Minute}, true, "--client-start 1m0s: the client would start after the run's --duration 1m0s ends"},
		{Client{Gap: time.Second}, false, "--client-gap applies to closed loops"},
		{Client{Start: time.Second}, false, "--client-start applies to closed loops"},
	} {
		if _, err := tc.c.Model(tc.closedLoop, time.Minute); err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
	both := Client{ChunkCost: time.Millisecond, ServerChunkCost: 50 * time.Microsecond}
	if _, err := both.ServerLoop(); err == nil || !strings.Contains(err.Error(), "not supported together yet") {
		t.Errorf("both chunk costs: %v", err)
	}
	loop := Client{ServerChunkCost: 50 * time.Microsecond}
	if sl, err := loop.ServerLoop(); err != nil || sl.ChunkCost != 50*time.Microsecond || !strings.HasPrefix(loop.Note(), "server streaming loop modelled (server_chunk_cost 50µs)") {
		t.Errorf("server loop %+v, %v, note %q", sl, err, loop.Note())
	}
}
