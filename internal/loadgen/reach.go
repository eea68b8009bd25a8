package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// reachTimeout bounds CheckReachable's dial, and its wait for the first
// byte of an answer: a target that takes longer to accept a connection,
// or to answer a bare GET at all, is not one to load.
const reachTimeout = 5 * time.Second

// dialTimeout bounds each request's connect (newTransport).
const dialTimeout = 10 * time.Second

// CheckReachable dials baseURL's host once, as the run's start-up check:
// a dead target (nothing listening, no route, an unknown host) is an
// error that says so in a second instead of a run of connect failures.
// Over plain HTTP it then sends a bare GET and waits for the first byte
// of any answer: a server that listens but never accepts connections (its
// accept queue full, or its accepting thread stuck) completes the TCP
// handshake in the kernel and then says nothing, and without this check
// every request would wait out its own timeouts while the run looks
// silent. Through a proxy (HTTP_PROXY and the like) the proxy is what is
// dialed, so the check is left to the run.
func CheckReachable(ctx context.Context, baseURL string) error {
	return checkReachable(ctx, baseURL, reachTimeout)
}

func checkReachable(ctx context.Context, baseURL string, wait time.Duration) error {
	u, err := url.Parse(baseURL)
	if err != nil {
		return err
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		var ne net.Error
		if ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("cannot connect to %s: the dial (connect) timed out after %v: the target does not accept connections (its accept queue full, or the server stuck), or a firewall drops them: %w", host, wait, err)
		}
		return fmt.Errorf("cannot connect to %s: %w", host, err)
	}
	defer c.Close()
	if u.Scheme != "http" {
		return nil // TLS: the handshake is the run's
	}
	c.SetDeadline(time.Now().Add(wait))
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", u.Host); err != nil {
		return nil // closed at once: it accepts connections; the run judges the rest
	}
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		var ne net.Error
		if ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("connected to %s, but it answered nothing to a GET in %v: it listens without accepting connections (its accept queue full, or the server stuck), so every request would wait out its connect (dial) timeout of %v or its own --request-timeout", host, wait, dialTimeout)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Closed without an answer: an odd server, but one that accepts
		// connections; the run will say what it makes of the requests.
	}
	return nil
}
