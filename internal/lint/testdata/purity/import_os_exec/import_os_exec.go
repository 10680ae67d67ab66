// Package importosexec imports os/exec.
package importosexec

import _ "os/exec" // want "imports os/exec, which a pure package must not"
