//go:build linux

package simserver

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/knee-dev/knee/internal/wake"
)

// floorReaderEnv makes the test binary a bare reader (see floorReader).
const floorReaderEnv = "KNEE_SIMSERVER_FLOOR_READER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(floorReaderEnv); spec != "" {
		floorReader(spec)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// floorReader is the cheapest possible client: it opens n connections to
// addr ("addr,n") and reads them all from one thread with epoll until
// every one is closed.
func floorReader(spec string) {
	addr, ns, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(ns)
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		panic(err)
	}
	sa := &unix.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	runtime.LockOSThread()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		panic(err)
	}
	for range n {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			panic(err)
		}
		if err := unix.Connect(fd, sa); err != nil {
			panic(err)
		}
		unix.SetNonblock(fd, true)
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			panic(err)
		}
	}
	evs := make([]unix.EpollEvent, 512)
	buf := make([]byte, 64<<10)
	for open := n; open > 0; {
		k, err := unix.EpollWait(ep, evs, -1)
		if err != nil {
			continue
		}
		for _, ev := range evs[:k] {
			fd := int(ev.Fd)
			if m, err := unix.Read(fd, buf); m == 0 && err == nil {
				unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil)
				unix.Close(fd)
				open--
			}
		}
	}
}

// BenchmarkWriteFloor is the floor under the pacer's lag at a given
// number of streams: a batched engine ends a step with one token for every
// running stream, all due at the same instant, so the last of them can
// leave no earlier than the time the machine takes to write them all.
// Here nothing else runs: one write(2) of a pre-built SSE chunk per
// stream per step, from GOMAXPROCS goroutines in parallel, into loopback
// sockets read by the cheapest possible client (one thread, epoll) in a
// child process; no HTTP, no engine, no JSON. Each token's lag is when its
// write started minus the step's end.
//
//	go test ./internal/simserver -run '^$' -bench WriteFloor -benchtime 1x -v
func BenchmarkWriteFloor(b *testing.B) {
	for _, streams := range []int{64, 256, 1000} {
		b.Run(fmt.Sprint("streams=", streams), func(b *testing.B) {
			for b.Loop() {
				writeFloorRun(b, streams, 200, 16*time.Millisecond)
			}
		})
	}
}

func writeFloorRun(b *testing.B, streams, steps int, gap time.Duration) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d", floorReaderEnv, ln.Addr(), streams))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	conns := make([]net.Conn, streams)
	fds := make([]int, streams)
	for i := range conns {
		c, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = c
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			b.Fatal(err)
		}
		raw.Control(func(fd uintptr) { fds[i] = int(fd) })
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	chunk := []byte("3c\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"}}]}\n\n\r\n")
	workers := runtime.GOMAXPROCS(0)
	lags := make([][]time.Duration, workers)
	var drains []time.Duration
	wk := wake.New() // the pacer's own: Go's timers alone wake up to 1 ms late
	defer wk.Close()
	start := time.Now()
	cpu0 := cpuTime()
	for step := 1; step <= steps; step++ {
		due := start.Add(time.Duration(step) * gap)
		for d := time.Until(due); d > 0; d = time.Until(due) {
			wk.Sleep(d)
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < streams; i += workers {
					lags[w] = append(lags[w], time.Since(due))
					if _, err := rawWrite(fds[i], chunk); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		drains = append(drains, time.Since(due))
	}
	cpu := cpuTime() - cpu0
	all := slices.Concat(lags...)
	slices.Sort(all)
	slices.Sort(drains)
	q := func(v []time.Duration, p float64) float64 { return float64(v[int(p*float64(len(v)-1))]) / 1e6 }
	b.ReportMetric(q(all, 0.5), "lag-p50-ms")
	b.ReportMetric(q(all, 0.99), "lag-p99-ms")
	b.ReportMetric(q(drains, 0.5), "drain-p50-ms")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(all))/1e3, "cpu-µs/token")
	b.Logf("%d streams × %d steps, %d writers: lag p50 %.3f ms p99 %.3f ms max %.3f ms; whole burst written p50 %.3f ms p99 %.3f ms; writer CPU %.2f µs/token",
		streams, steps, workers, q(all, 0.5), q(all, 0.99), q(all, 1), q(drains, 0.5), q(drains, 0.99), float64(cpu.Nanoseconds())/float64(len(all))/1e3)
}
