// Package gostmt starts a goroutine.
package gostmt

func start(f func()) {
	go f() // want "go statement"
}

func startLiteral(ch chan int) {
	go func() { // want "go statement"
		ch <- 1
	}()
}
