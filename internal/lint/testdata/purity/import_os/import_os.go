// Package importos imports os.
package importos

import _ "os" // want "imports os, which a pure package must not"
