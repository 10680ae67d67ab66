// Package importenginesub imports example.com/fixture/internal/engine/lsm.
package importenginesub

import _ "example.com/fixture/internal/engine/lsm" // want "imports internal/engine/lsm, which a pure package must not"
