package enginesetup

import (
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/serverprofile"
)

// ServerProfileHelp is --server-profile's help.
func ServerProfileHelp() string {
	return "the kind of server: a built-in server profile (" + strings.Join(serverprofile.Names(), ", ") +
		") or a YAML file of one (engine family and version, API-server costs, efficiencies, scheduling); the cost flags override it; default: vllm, knee's defaults"
}

// loadServerProfile resolves --server-profile (empty: none).
func (e *Choice) loadServerProfile() error {
	if e.ServerProfileName == "" {
		return nil
	}
	if e.Profile != "" {
		return badinput.Errorf("--server-profile and --profile: give one (a calibrated --profile is already one host's constants)")
	}
	p, err := serverprofile.Resolve(e.ServerProfileName)
	if err != nil {
		return badinput.Errorf("--server-profile: %v", err)
	}
	e.ServerProfile = &p
	return nil
}

// FittedHost says whether the run's constants are one host's fit (a
// calibrated --profile, a host's server profile) rather than knee's
// defaults: the held-out ranges describe only the defaults.
func (e *Choice) FittedHost() bool {
	if e.Profile != "" {
		return true
	}
	if p := e.ServerProfile; p != nil && p.Name != "vllm" && p.Name != "sglang" {
		return true
	}
	return false
}
