// Package badinput is the error for bad usage or bad input: a flag, file or
// line that is wrong. knee exits 2 on it, so every package that checks what a
// user gave returns one, and the message names what was wrong and what was
// expected.
package badinput

import (
	"errors"
	"fmt"
)

// Error is bad usage or bad input.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error; %w wraps as fmt.Errorf does.
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// Wrap marks err as bad input; nil stays nil.
func Wrap(err error) error {
	if err == nil || Is(err) {
		return err
	}
	return &Error{Err: err}
}

// Is reports whether err is, or wraps, bad input.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
