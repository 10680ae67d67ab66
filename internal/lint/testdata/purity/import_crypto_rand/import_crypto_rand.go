// Package importcryptorand imports crypto/rand.
package importcryptorand

import _ "crypto/rand" // want "imports crypto/rand, which a pure package must not"
