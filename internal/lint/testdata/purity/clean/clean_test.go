package clean

import (
	"os"
	"testing"
	"time"
)

// Tests may drive a pure package with the clock, goroutines and the OS: test files are not
// checked.
func TestClean(t *testing.T) {
	done := make(chan struct{})
	go func() {
		time.Sleep(time.Millisecond)
		close(done)
	}()
	<-done
	_ = time.Now()
	_ = os.Getenv("HOME")
}
