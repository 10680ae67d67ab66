package resp

import "github.com/kuradb/kura/internal/glob"

// globMatch and isGlob are package glob's, which ACL key patterns share with KEYS and SCAN.
func globMatch(p, s []byte) bool { return glob.Match(p, s) }
func isGlob(p []byte) bool       { return glob.IsGlob(p) }
