package cli

import (
	"github.com/knee-dev/knee/internal/scenario"
	"github.com/spf13/pflag"
)

// Scenario files (--scenario-file, --save-scenario) are internal/scenario's.
const (
	scenarioFileFlag = scenario.FileFlag
	saveScenarioFlag = scenario.SaveFlag
)

var applyScenarioFile = scenario.Apply

// saveScenario writes the settings given, and the resolved ones, to path.
func saveScenario(fs *pflag.FlagSet, path string, resolved [][2]string) error {
	return scenario.Save(fs, path, resolved, Version)
}

// Values makes a repeated --slo a YAML list in a saved scenario.
func (s *stringList) Values() []string { return *s }
