//go:build !linux

package loadgen

import (
	"context"
	"net"
)

// kernelStampsSupported: kernel receive timestamps are Linux-only here;
// elsewhere every read is stamped in user space.
const kernelStampsSupported = false

func dialStamped(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.DialContext
}

// dialWitnessed: no kernel here tells knee what a peer acknowledged, so
// connections are plain and a failed request's fate is learned from the
// server instead (Run.stopReuse).
func dialWitnessed(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.DialContext
}

func holdKernelStamps() {}
