//go:build linux

package loadgen

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/knee-dev/knee/internal/cpuclock"
	"github.com/knee-dev/knee/internal/sse"
)

// BenchmarkReadFloorEpoll is the floor of a different client design than
// BenchmarkReadFloor's goroutine per connection: one OS thread, one epoll
// set holding every connection, one read(2) per ready connection, no Go
// netpoller. It bounds what any such design could save on this machine.
func BenchmarkReadFloorEpoll(b *testing.B) {
	for _, streams := range []int{256, 1000} {
		b.Run("streams="+strconv.Itoa(streams), func(b *testing.B) {
			const tokens, gap = 200, 20 * time.Millisecond
			addr := strings.TrimPrefix(startChild(b, fmt.Sprintf("raw:%v,%d", gap, tokens)), "http://")
			ta, err := net.ResolveTCPAddr("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			sa := &unix.SockaddrInet4{Port: ta.Port}
			copy(sa.Addr[:], ta.IP.To4())
			for b.Loop() {
				runtime.LockOSThread()
				ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
				if err != nil {
					b.Fatal(err)
				}
				cpu0 := cpuclock.Process()
				open := 0
				for range streams {
					fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
					if err != nil {
						b.Fatal(err)
					}
					if err := unix.Connect(fd, sa); err != nil {
						b.Fatal(err)
					}
					unix.SetNonblock(fd, true)
					ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
					if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
						b.Fatal(err)
					}
					open++
				}
				evs := make([]unix.EpollEvent, 512)
				buf := make([]byte, 16<<10)
				total, waits, reads := 0, 0, 0
				var ts unix.Timespec
				for open > 0 {
					n, err := unix.EpollWait(ep, evs, -1)
					if err == unix.EINTR {
						continue
					}
					if err != nil {
						b.Fatal(err)
					}
					waits++
					for _, ev := range evs[:n] {
						fd := int(ev.Fd)
						m, err := unix.Read(fd, buf)
						reads++
						unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
						if m > 0 {
							total += m
							continue
						}
						if err == unix.EAGAIN {
							continue
						}
						unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil)
						unix.Close(fd)
						open--
					}
				}
				unix.Close(ep)
				cpu := cpuclock.Process() - cpu0
				runtime.UnlockOSThread()
				events := total / len(sse.AppendData(nil, []byte(benchContent)))
				perToken := float64(cpu.Nanoseconds()) / float64(events) / 1e3
				b.ReportMetric(perToken, "cpu-µs/token")
				b.Logf("%d streams: %d events, %d epoll_waits (%.1f ready each), %d reads, CPU %v = %.2f µs/event",
					streams, events, waits, float64(reads)/float64(waits), reads, cpu.Round(time.Millisecond), perToken)
			}
		})
	}
}
