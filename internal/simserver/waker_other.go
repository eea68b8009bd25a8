//go:build !linux

package simserver

func newWaker() (waker, error) { return newTimerWaker(), nil }
