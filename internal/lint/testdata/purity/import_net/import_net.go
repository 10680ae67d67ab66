// Package importnet imports net.
package importnet

import _ "net" // want "imports net, which a pure package must not"
