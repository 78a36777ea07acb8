//go:build !linux

package sidecar

import (
	"errors"
	"os"
)

// fastLinks is false here: the linker uses os.Root.Link.
var fastLinks = false

func linkAt(*os.File, string, *os.File, string) error {
	return errors.New("linkat: not used on this platform")
}

func statAt(*os.File, string) (linked, error) {
	return linked{}, errors.New("fstatat: not used on this platform")
}
