// Package importengine imports example.com/fixture/internal/engine.
package importengine

import _ "example.com/fixture/internal/engine" // want "imports internal/engine, which a pure package must not"
