// Package importthirdparty imports a third-party package that is not on the allowlist.
package importthirdparty

import "github.com/redis/go-redis/v9" // want "imports github.com/redis/go-redis/v9, a third-party package not on the allowlist"

var _ = redis.Nil
