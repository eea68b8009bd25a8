package scrape

import (
	"math/bits"
	"strconv"
	"strings"
)

// The bits of DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (DCGM_FI_DEV_CLOCKS_EVENT_REASONS),
// a 1:1 map of NVML's nvmlClocksThrottleReason* / nvmlClocksEventReason*
// (DCGM's DCGM_CLOCKS_THROTTLE_REASON_* field constants; NVML API reference,
// "NvmlClocksThrottleReasons", R525). The mask is a set of reasons, so it is
// never averaged: each reading's bits are named.
const (
	ThrottleGPUIdle         uint64 = 0x1   // nothing runs; clocks drop to idle (not a slowdown)
	ThrottleAppClocks       uint64 = 0x2   // limited by the applications clocks setting
	ThrottleSWPowerCap      uint64 = 0x4   // the software power cap lowers clocks
	ThrottleHWSlowdown      uint64 = 0x8   // hardware slowdown (≥2×): heat, power brake or fast power trigger
	ThrottleSyncBoost       uint64 = 0x10  // held to a sync-boost group's clocks
	ThrottleSWThermal       uint64 = 0x20  // software thermal slowdown
	ThrottleHWThermal       uint64 = 0x40  // hardware thermal slowdown
	ThrottleHWPowerBrake    uint64 = 0x80  // hardware power brake (e.g. the power supply asserts it)
	ThrottleDisplayClocks   uint64 = 0x100 // limited by the display clocks setting
	throttleKnownReasonBits        = ThrottleGPUIdle | ThrottleAppClocks | ThrottleSWPowerCap | ThrottleHWSlowdown | ThrottleSyncBoost |
		ThrottleSWThermal | ThrottleHWThermal | ThrottleHWPowerBrake | ThrottleDisplayClocks
)

var throttleNames = []struct {
	bit  uint64
	name string
}{
	{ThrottleGPUIdle, "GPU idle"},
	{ThrottleAppClocks, "applications clocks setting"},
	{ThrottleSWPowerCap, "power cap (software)"},
	{ThrottleHWSlowdown, "hardware slowdown"},
	{ThrottleSyncBoost, "sync boost"},
	{ThrottleSWThermal, "thermal (software)"},
	{ThrottleHWThermal, "thermal (hardware)"},
	{ThrottleHWPowerBrake, "power brake (hardware)"},
	{ThrottleDisplayClocks, "display clocks setting"},
}

// ThrottleReasonNames names the set bits of a throttle reasons mask, in
// bit order; a bit NVML had not documented is "bit N" (later drivers add
// reasons).
func ThrottleReasonNames(mask uint64) []string {
	var out []string
	for _, r := range throttleNames {
		if mask&r.bit != 0 {
			out = append(out, r.name)
		}
	}
	for rest := mask &^ throttleKnownReasonBits; rest != 0; rest &= rest - 1 {
		out = append(out, "bit "+strconv.Itoa(bits.TrailingZeros64(rest)))
	}
	return out
}

// ThrottleMaskString is a mask as hex with its reasons named:
// "0x24 (power cap (software), thermal (software))".
func ThrottleMaskString(mask uint64) string {
	s := "0x" + strconv.FormatUint(mask, 16)
	if names := ThrottleReasonNames(mask); len(names) > 0 {
		s += " (" + strings.Join(names, ", ") + ")"
	}
	return s
}

// Slowed says whether a mask holds a reason that slows a running GPU:
// any bit but GPU idle, which only says that nothing ran.
func Slowed(mask uint64) bool { return mask&^ThrottleGPUIdle != 0 }

// throttleMask reads a reasons reading as its mask: the exporter writes the
// integer as a float; a negative or fractional reading is not a mask.
func throttleMask(v float64) (uint64, bool) {
	if !(v >= 0 && v < 1<<53) || v != float64(uint64(v)) {
		return 0, false
	}
	return uint64(v), true
}
