//go:build !linux

package lowprio

import "errors"

var errUnsupported = errors.New("lowprio: thread priorities are Linux only")

func lower() error       { return errUnsupported }
func nice() (int, error) { return 0, errUnsupported }
