package cli

import (
	"fmt"
	"time"

	"github.com/knee-dev/knee/internal/liveview"
	"github.com/knee-dev/knee/internal/record"
)

// The live view of a running bench is internal/liveview's.
type progressSnapshot = liveview.Snapshot

var progress = liveview.Start

// recentWindow keeps the latest completed requests for the live view.
type recentWindow struct{ *liveview.Recent }

func newRecentWindow() recentWindow               { return recentWindow{liveview.NewRecent()} }
func (w recentWindow) add(r *record.Request)      { w.Add(r) }
func (w recentWindow) snapshot() liveview.Latency { return w.Snapshot() }

func msStr(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
