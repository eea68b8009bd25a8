package badinput

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestErrorfWrapsAndIsFound(t *testing.T) {
	err := Errorf("--rate %q: %w", "abc", io.EOF)
	if err.Error() != `--rate "abc": EOF` || !errors.Is(err, io.EOF) {
		t.Errorf("Errorf: %q, wraps EOF %v", err, errors.Is(err, io.EOF))
	}
	if outer := fmt.Errorf("bench: %w", err); !Is(outer) {
		t.Error("Is does not find bad input wrapped in another error")
	}
	if Is(io.EOF) || Is(nil) {
		t.Error("Is takes a plain error or nil for bad input")
	}
}

func TestWrap(t *testing.T) {
	if Wrap(nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	w := Wrap(io.EOF)
	if !Is(w) || !errors.Is(w, io.EOF) {
		t.Errorf("Wrap(EOF) = %v", w)
	}
	if Wrap(w) != w {
		t.Error("Wrap of bad input wraps it again")
	}
}
