// Command xfiber-bench-go is the Go peer of `xfiber bench ctx`: goroutine
// switches on one OS thread (GOMAXPROCS=1), timed the way the C rows are.
//
//	xfiber-bench-go -mode gosched|chan -n N
//
// gosched: two goroutines calling runtime.Gosched() N times each, so every
// call hands the processor to the other.  chan: N round trips over a pair of
// unbuffered channels.  It prints one line, "SWITCHES NANOSECONDS".
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

func gosched(n int) (int, time.Duration) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	worker := func() {
		defer wg.Done()
		<-start
		for i := 0; i < n; i++ {
			runtime.Gosched()
		}
	}
	wg.Add(2)
	go worker()
	go worker()
	// Let both reach the start line, so neither yields alone.
	runtime.Gosched()
	t0 := time.Now()
	close(start)
	wg.Wait()
	return 2 * n, time.Since(t0)
}

func channel(n int) (int, time.Duration) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		ping <- i
		<-pong
	}
	elapsed := time.Since(t0)
	close(ping)
	return 2 * n, elapsed
}

func main() {
	mode := flag.String("mode", "", "gosched or chan")
	n := flag.Int("n", 0, "round trips (chan) or yields per goroutine (gosched)")
	flag.Parse()
	// The environment says so too; this makes it true whatever it says.
	runtime.GOMAXPROCS(1)
	var run func(int) (int, time.Duration)
	switch *mode {
	case "gosched":
		run = gosched
	case "chan":
		run = channel
	default:
		fmt.Fprintf(os.Stderr, "xfiber-bench-go: -mode must be gosched or chan, not %q\n", *mode)
		os.Exit(2)
	}
	if *n <= 0 || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "xfiber-bench-go: usage: xfiber-bench-go -mode gosched|chan -n N (N > 0)")
		os.Exit(2)
	}
	// Each run is a fresh process: warm the scheduler up before timing.
	warm := *n
	if warm > 10000 {
		warm = 10000
	}
	run(warm)
	switches, elapsed := run(*n)
	fmt.Printf("%d %d\n", switches, elapsed.Nanoseconds())
}
