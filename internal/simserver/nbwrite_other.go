//go:build !unix

package simserver

import (
	"net"
	"syscall"
)

// rawConnOf is unix-only; elsewhere hijacked streams use blocking writes
// with a deadline.
func rawConnOf(net.Conn) syscall.RawConn { return nil }

type nbWriter struct{}

func (*nbWriter) writeNow(syscall.RawConn, []byte) error { return nil }
