// Package importnethttp imports net/http.
package importnethttp

import _ "net/http" // want "imports net/http, which a pure package must not"
