//go:build !linux

package simserver

import "net"

// kernelStamps is Linux-only; elsewhere arrival is the time of the first read.
type kernelStamps struct{}

func (k *kernelStamps) init(net.Conn)                               {}
func (k *kernelStamps) on() bool                                    { return false }
func (k *kernelStamps) pending() bool                               { return false }
func (k *kernelStamps) read(*stampConn, []byte) (int, int64, error) { return 0, 0, nil }

func stampListenerSocket(net.Listener) {}
