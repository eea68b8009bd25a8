// Command hostileserver serves hostile.Server with one fault for every
// request, for measuring knee by hand against a misbehaving target (see
// internal/loadgen/doc.go for the commands):
//
//	go run ./internal/hostile/cmd/hostileserver -fault never-ending -addr 127.0.0.1:18800
//
// -die ends the process after that long, so that a run sees its target go
// away; -close-after-response serves with hostile.Closer instead (every
// connection closed after its response, unsaid, as llama.cpp does).
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/hostile"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18800", "address to listen on")
	name := flag.String("fault", "ok", "the fault of every request: "+faultNames())
	die := flag.Duration("die", 0, "exit after this long (0: never)")
	closer := flag.Bool("close-after-response", false, "close every connection after its response (llama.cpp's way)")
	flag.Parse()
	fault, ok := faultNamed(*name)
	if !ok {
		fmt.Fprintf(os.Stderr, "hostileserver: -fault %q: want one of %s\n", *name, faultNames())
		os.Exit(2)
	}
	if *die > 0 {
		time.AfterFunc(*die, func() { os.Exit(0) })
	}
	h := hostile.New(func(int64) hostile.Fault { return fault })
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostileserver:", err)
		os.Exit(1)
	}
	fmt.Println("http://" + ln.Addr().String())
	if *closer {
		hostile.ServeCloser(ln, h, nil)
		select {}
	}
	fmt.Fprintln(os.Stderr, "hostileserver:", http.Serve(ln, h))
	os.Exit(1)
}

func faultNamed(name string) (hostile.Fault, bool) {
	for _, f := range hostile.Faults() {
		if f.String() == name {
			return f, true
		}
	}
	return 0, false
}

func faultNames() string {
	var names []string
	for _, f := range hostile.Faults() {
		names = append(names, f.String())
	}
	return strings.Join(names, ", ")
}
