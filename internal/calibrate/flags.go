package calibrate

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/simengine"
)

// Check refuses settings a calibration cannot run with, naming the flag of
// knee calibrate that gave them; parallel is --parallel (the server's slots
// for a linear step model, else 0).
func (c *Config) Check(parallel int) error {
	h := c.HoldOut
	switch {
	case c.PrefillRequests < 1:
		return badinput.Errorf("--prefill-requests %d: want 1 or more", c.PrefillRequests)
	case c.DecodeDuration <= 0:
		return badinput.Errorf("--decode-duration %v: want a positive duration such as 5s", c.DecodeDuration)
	case c.DecodeOutput < 8:
		return badinput.Errorf("--decode-output-tokens %d: want 8 or more (gaps to measure)", c.DecodeOutput)
	case h.Concurrency < 1 || h.Input < 1 || h.Output < 2:
		return badinput.Errorf("--holdout-concurrency %d, --holdout-input-tokens %d, --holdout-output-tokens %d: want >= 1, >= 1, >= 2", h.Concurrency, h.Input, h.Output)
	case h.Duration <= 0:
		return badinput.Errorf("--holdout-duration %v: want a positive duration", h.Duration)
	case c.API != "chat" && c.API != "completions":
		return badinput.Errorf("--api %q: want chat or completions", c.API)
	case c.StepModel != StepModelRoofline && c.StepModel != StepModelLinear:
		return badinput.Errorf("--step-model %q: want roofline or linear", c.StepModel)
	case c.StepModel == StepModelLinear && parallel < 1:
		return badinput.Errorf("--step-model linear needs --parallel N: the server's parallel slots (OLLAMA_NUM_PARALLEL; Ollama's default is 1 or 4 by memory)")
	case c.StepModel != StepModelLinear && parallel != 0:
		return badinput.Errorf("--parallel is for --step-model linear; a roofline calibration takes --max-num-seqs")
	}
	return nil
}

// LinearDefaults replaces the roofline's default measurements, which a CPU
// server would take hours over, with short ones for the settings the user
// did not give (set: by flag name): short prompts, decode at every batch up
// to the slots (1, half and all of many), and a held-out concurrency the
// decode points never ran (one below the slots where that batch is not
// measured, else one above).
func (c *Config) LinearDefaults(set map[string]bool, slots int) {
	if !set["prefill-lengths"] {
		c.PrefillLengths = nil // the linear defaults
	}
	if !set["holdout-concurrency"] {
		measured := c.DecodePoints
		if len(measured) == 0 {
			measured = DefaultLinearDecodePoints(slots)
		}
		c.HoldOut.Concurrency = slots + 1
		if slots >= 3 && !slices.ContainsFunc(measured, func(d DecodePoint) bool { return d.Batch == slots-1 }) {
			c.HoldOut.Concurrency = slots - 1
		}
	}
	if !set["holdout-input-tokens"] {
		c.HoldOut.Input = 64
	}
	if !set["holdout-output-tokens"] {
		c.HoldOut.Output = 64
	}
}

// Save writes the profile to --out path whole.
func (p Profile) Save(path string) error {
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// Interrupted keeps what an interrupted calibration measured: its points
// on w and, when they were enough for a fit, the profile (in out when
// given, else on w), then says in the error what is missing.
func Interrupted(w io.Writer, ec simengine.Config, target, out string, res *Result, cause error) error {
	fmt.Fprintf(w, "\nInterrupted: the %d points measured before the stop:\n", len(res.Points))
	for _, p := range res.Points {
		fmt.Fprintf(w, "  %-8s batch %4d  %6d tokens  %9.3f ms  (%d samples)\n", p.Kind, p.Batch, p.InputTokens, p.MeasuredMS, p.Samples)
	}
	if !res.Fitted {
		return fmt.Errorf("interrupted (%v): %d points kept above, too few for a profile (want two prefill and two decode points)", cause, len(res.Points))
	}
	prof := NewProfile(ec, target, res)
	where := "printed above"
	if out != "" {
		if err := prof.Save(out); err != nil {
			return err
		}
		where = "written to " + out
	} else {
		var buf bytes.Buffer
		if err := prof.Write(&buf); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nProfile fitted from them (no held-out check):\n%s", buf.String())
	}
	return fmt.Errorf("interrupted (%v): a profile fitted from the %d points measured is %s, without its held-out check", cause, len(res.Points), where)
}
