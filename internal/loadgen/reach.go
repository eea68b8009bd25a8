package loadgen

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// reachTimeout bounds CheckReachable's dial: a target that takes longer to
// accept a connection is not one to load.
const reachTimeout = 5 * time.Second

// CheckReachable dials baseURL's host once, as the run's start-up check:
// a dead target (nothing listening, no route, an unknown host) is an
// error that says so in a second instead of a run of connect failures.
// Through a proxy (HTTP_PROXY and the like) the proxy is what is dialed,
// so the check is left to the run.
func CheckReachable(ctx context.Context, baseURL string) error {
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
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("cannot connect to %s: %w", host, err)
	}
	return c.Close()
}
