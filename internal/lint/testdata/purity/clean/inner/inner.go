// Package inner is a pure package that clean imports.
package inner

// Salt is mixed into digests.
const Salt = 0x9e3779b97f4a7c15
