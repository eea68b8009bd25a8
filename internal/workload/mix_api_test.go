package workload

import (
	"slices"
	"testing"

	"github.com/knee-dev/knee/internal/openai"
)

func TestMixAPIsAreTheClientsAPIs(t *testing.T) {
	if !slices.Equal(mixAPIs, openai.APIs) {
		t.Errorf("mix file APIs %v, the client's %v", mixAPIs, openai.APIs)
	}
}
