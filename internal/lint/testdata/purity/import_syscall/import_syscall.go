// Package importsyscall imports syscall.
package importsyscall

import _ "syscall" // want "imports syscall, which a pure package must not"
