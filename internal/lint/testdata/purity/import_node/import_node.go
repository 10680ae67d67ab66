// Package importnode imports example.com/fixture/internal/node.
package importnode

import _ "example.com/fixture/internal/node" // want "imports internal/node, which a pure package must not"
