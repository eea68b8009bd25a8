//go:build linux

package simserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const fdChildEnv = "KNEE_SIMSERVER_FDLIMIT_CHILD"

// TestServeRecoversFromDescriptorExhaustion runs knee's server in a child
// process whose descriptor limit is 64, floods it with more connections
// than that (its accepts fail with EMFILE), then lets them go: /health
// must answer again within a second. The server used to stop accepting
// for good at the first such error.
func TestServeRecoversFromDescriptorExhaustion(t *testing.T) {
	if os.Getenv(fdChildEnv) != "" {
		serveWithFewDescriptors(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeRecoversFromDescriptorExhaustion$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), fdChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the child exits when its stdin closes
		cmd.Wait()
	}()
	var addr string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatal("the child server did not start")
	}
	go func() {
		for sc.Scan() { // drain the child's test output
		}
	}()
	health := func() error {
		c := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + addr + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	if err := health(); err != nil {
		t.Fatalf("health before the flood: %v", err)
	}

	var flood []net.Conn
	for range 150 {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // the backlog is full: the server is well past its limit
		}
		flood = append(flood, c)
	}
	if err := health(); err == nil {
		t.Fatalf("health answered with %d connections held: the flood did not exhaust the server's descriptors", len(flood))
	}
	for _, c := range flood {
		c.Close()
	}
	ended := time.Now()
	var last error
	for time.Since(ended) < 5*time.Second {
		if last = health(); last == nil {
			break
		}
	}
	took := time.Since(ended)
	t.Logf("%d connections held; /health answered %v after they closed", len(flood), took.Round(time.Millisecond))
	if last != nil {
		t.Fatalf("/health never answered again after the flood: %v", last)
	}
	if took > time.Second {
		t.Errorf("/health answered %v after the flood ended, want within a second", took)
	}
}

// serveWithFewDescriptors is the child: descriptors limited to 64, a
// server on loopback, its address on stdout, until stdin closes.
func serveWithFewDescriptors(t *testing.T) {
	lim := syscall.Rlimit{Cur: 64, Max: 64}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); err == nil && cur.Max < lim.Max {
		lim.Max = cur.Max
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	_, srv, err := StartLocal(context.Background(), testConfig(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fmt.Printf("listening %s\n", srv.Addr())
	os.Stdin.Read(make([]byte, 1))
}
