// Package importimpure imports a package of the module that is not on the pure list.
package importimpure

import "example.com/fixture/internal/hint" // want "imports internal/hint, which is not pure"

var _ = hint.Keep
