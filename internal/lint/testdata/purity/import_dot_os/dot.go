// Package importdotos dot-imports a banned package: the import is reported as such.
package importdotos

import . "os" // want "imports os, which a pure package must not"

func home() string {
	return Getenv("HOME")
}
