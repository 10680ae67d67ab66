// Package timeafterfunc arms a wall-clock callback.
package timeafterfunc

import "time"

func arm(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(d, f) // want "calls time.AfterFunc"
}
