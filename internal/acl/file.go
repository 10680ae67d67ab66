package acl

import (
	"bytes"
	"fmt"
	"strings"
)

// The ACL file is Redis's format: one "user <name> <rules...>" line per user, as ACL LIST
// prints them; blank lines and lines starting with '#' are ignored. Loading checks the
// whole file before anything changes (see Registry.LoadFile's callers).

// MaxFileBytes bounds an ACL file (1 MiB: thousands of users).
const MaxFileBytes = 1 << 20

// FileError is a line of an ACL file that does not load.
type FileError struct {
	Line int
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("acl: line %d: %v", e.Line, Reply(e.Err)) }
func (e *FileError) Unwrap() error { return e.Err }

// Reply is Redis's wording for ACL LOAD ("/path:3: Error in ...") without the path.
func (e *FileError) Reply() string { return fmt.Sprintf("line %d: %s", e.Line, Reply(e.Err)) }

// splitFile returns data's user lines with their line numbers (1-based).
func splitFile(data []byte) (lines []string, numbers []int, err error) {
	if len(data) > MaxFileBytes {
		return nil, nil, fmt.Errorf("acl: file of %d bytes exceeds %d", len(data), MaxFileBytes)
	}
	for i, l := range bytes.Split(data, []byte("\n")) {
		s := strings.Trim(string(l), " \t\r")
		if s == "" || s[0] == '#' {
			continue
		}
		lines, numbers = append(lines, s), append(numbers, i+1)
	}
	return lines, numbers, nil
}

// parseLines builds a user set from "user <name> <rules...>" lines; def are the rules
// that build the default user when no line names it.
func parseLines(env *ruleEnv, lines []string, def []string) (map[string]*User, error) {
	users := map[string]*User{}
	for i, l := range lines {
		if err := parseLine(env, users, l); err != nil {
			return nil, &FileError{Line: i + 1, Err: err}
		}
	}
	if users[DefaultUser] == nil {
		u := newUser(DefaultUser, env.cat)
		if err := env.applyRules(u, def); err != nil {
			return nil, err
		}
		users[DefaultUser] = u
	}
	return users, nil
}

// splitRules splits a line at runs of spaces and tabs (not at other Unicode spaces, which
// rules may contain).
func splitRules(l string) []string {
	return strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '\t' })
}

// userLine splits a "user <name> <rules...>" line into its fields.
func userLine(l string) ([]string, error) {
	f := splitRules(l)
	if len(f) < 2 || f[0] != "user" {
		return nil, &ReplyError{"Line should start with user keyword"}
	}
	if !validName(f[1]) {
		return nil, ErrBadUsername
	}
	return f, nil
}

// prepareLine returns a user line with its cleartext passwords hashed (see prepareRule).
func (e *ruleEnv) prepareLine(l string) (string, error) {
	f, err := userLine(l)
	if err != nil {
		return "", err
	}
	rules, err := e.prepareRules(newUser(f[1], e.cat), f[2:])
	if err != nil {
		return "", err
	}
	return strings.Join(append(f[:2:2], rules...), " "), nil
}

func parseLine(env *ruleEnv, users map[string]*User, l string) error {
	f, err := userLine(l)
	if err != nil {
		return err
	}
	if users[f[1]] != nil {
		return &ReplyError{fmt.Sprintf("Duplicate user '%s' found", f[1])}
	}
	u := newUser(f[1], env.cat)
	if err := env.applyRules(u, f[2:]); err != nil {
		return err
	}
	users[f[1]] = u
	return nil
}

// FormatFile returns s as an ACL file: a header comment, then ACL LIST's lines.
func FormatFile(s *Snapshot) []byte {
	var b bytes.Buffer
	b.WriteString("# kura ACL file: one \"user <name> <rules...>\" line per user (see docs/design/acl.md)\n")
	for _, u := range s.Users() {
		b.WriteString(u.String() + "\n")
	}
	return b.Bytes()
}
