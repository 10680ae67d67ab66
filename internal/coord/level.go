package coord

import (
	"errors"
	"fmt"
	"strings"
)

// Level is a consistency level: how many replicas must answer a request.
type Level uint8

// The consistency levels.
const (
	One Level = iota + 1
	Two
	Quorum
	All
)

var levelNames = map[Level]string{One: "ONE", Two: "TWO", Quorum: "QUORUM", All: "ALL"}

func (l Level) String() string {
	if s, ok := levelNames[l]; ok {
		return s
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

// ParseLevel parses ONE, TWO, QUORUM or ALL, in any case.
func ParseLevel(s string) (Level, error) {
	for l, name := range levelNames {
		if strings.EqualFold(s, name) {
			return l, nil
		}
	}
	return 0, fmt.Errorf("coord: unknown consistency level %q (want ONE, TWO, QUORUM or ALL)", s)
}

// Required returns how many of rf replicas must answer at level l.
func (l Level) Required(rf int) int {
	switch l {
	case One:
		return 1
	case Two:
		return 2
	case Quorum:
		return rf/2 + 1
	case All:
		return rf
	}
	return rf
}

// Errors a coordinator returns to clients; see the package comment.
var (
	ErrUnavailable = errors.New("coord: not enough live replicas")
	ErrTimeout     = errors.New("coord: not enough replicas answered in time")
	ErrOverloaded  = errors.New("coord: overloaded")
)
