// Command knee load-tests, simulates and diagnoses LLM serving endpoints.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/knee-dev/knee/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C cancels ctx (the run stops and reports what it
	// measured); from then on the signals are the default again, so a
	// second Ctrl-C ends knee at once whatever it is waiting for.
	go func() { <-ctx.Done(); stop() }()
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
