package cli

import (
	"strings"

	"github.com/knee-dev/knee/internal/serverprofile"
	"github.com/knee-dev/knee/internal/simengine"
)

// serverProfileHelp is --server-profile's help.
func serverProfileHelp() string {
	return "the kind of server: a built-in server profile (" + strings.Join(serverprofile.Names(), ", ") +
		") or a YAML file of one (engine family and version, API-server costs, efficiencies, scheduling); the cost flags override it; default: vllm, knee's defaults"
}

// loadServerProfile resolves --server-profile (empty: none).
func (e *simEngineFlags) loadServerProfile() error {
	if e.serverProfileName == "" {
		return nil
	}
	if e.profile != "" {
		return Usagef("--server-profile and --profile: give one (a calibrated --profile is already one host's constants)")
	}
	p, err := serverprofile.Resolve(e.serverProfileName)
	if err != nil {
		return Usagef("--server-profile: %v", err)
	}
	e.serverProfile = &p
	return nil
}

// applyServerProfile sets the engine configuration to the chosen server
// profile, before the cost flags override it.
func (e *simEngineFlags) applyServerProfile(c *simengine.Config) {
	if e.serverProfile != nil {
		e.serverProfile.Apply(c)
	}
}

// fittedHost says whether the run's constants are one host's fit (a
// calibrated --profile, a host's server profile) rather than knee's
// defaults: the held-out ranges describe only the defaults.
func (e *simEngineFlags) fittedHost() bool {
	if e.profile != "" {
		return true
	}
	if p := e.serverProfile; p != nil && p.Name != "vllm" && p.Name != "sglang" {
		return true
	}
	return false
}
