// Command xfiber-bench-go is the Go peer of `xfiber bench ctx` and `io`:
// goroutine switches and socket round trips on one OS thread
// (GOMAXPROCS=1), timed the way the C rows are.
//
//	xfiber-bench-go -mode gosched|chan|unix|spawn-B -n N
//
// gosched: two goroutines calling runtime.Gosched() N times each, so every
// call hands the processor to the other.  chan: N round trips over a pair of
// unbuffered channels.  Both print one line, "SWITCHES NANOSECONDS".
//
// unix: N round trips of one byte each way between two goroutines over a
// Unix stream socket pair, each end a net.Conn served by Go's netpoller.
// It prints "ROUNDTRIPS NANOSECONDS".
//
// spawn-B: N goroutines started and waited for (a sync.WaitGroup), B alive
// at a time: B started, then all B waited for, and again.  It prints
// "SPAWNS NANOSECONDS".
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// conn makes a net.Conn of one end of a socket pair: non-blocking, in the
// netpoller, as a Go server's connections are.
func conn(fd int) net.Conn {
	f := os.NewFile(uintptr(fd), "socketpair")
	c, err := net.FileConn(f) // a duplicate of fd
	if err != nil {
		fmt.Fprintln(os.Stderr, "xfiber-bench-go:", err)
		os.Exit(1)
	}
	f.Close()
	return c
}

func unixSocket(n int) (int, time.Duration) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xfiber-bench-go: socketpair:", err)
		os.Exit(1)
	}
	a, b := conn(fds[0]), conn(fds[1])
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1)
		for {
			if _, err := io.ReadFull(b, buf); err != nil {
				return
			}
			if _, err := b.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := []byte{'x'}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if _, err := a.Write(buf); err != nil {
			fmt.Fprintln(os.Stderr, "xfiber-bench-go: write:", err)
			os.Exit(1)
		}
		if _, err := io.ReadFull(a, buf); err != nil {
			fmt.Fprintln(os.Stderr, "xfiber-bench-go: read:", err)
			os.Exit(1)
		}
	}
	elapsed := time.Since(t0)
	a.Close()
	<-done
	b.Close()
	return n, elapsed
}

// spawner returns the spawn-B run: n goroutines, b alive at a time.
func spawner(b int) func(int) (int, time.Duration) {
	return func(n int) (int, time.Duration) {
		var wg sync.WaitGroup
		t0 := time.Now()
		for done := 0; done < n; done += b {
			wg.Add(b)
			for i := 0; i < b; i++ {
				go func() { wg.Done() }()
			}
			wg.Wait()
		}
		return (n + b - 1) / b * b, time.Since(t0)
	}
}

func main() {
	mode := flag.String("mode", "", "gosched, chan, unix or spawn-B")
	n := flag.Int("n", 0, "round trips (chan, unix) or yields per goroutine (gosched)")
	flag.Parse()
	// The environment says so too; this makes it true whatever it says.
	runtime.GOMAXPROCS(1)
	var run func(int) (int, time.Duration)
	switch *mode {
	case "gosched":
		run = gosched
	case "chan":
		run = channel
	case "unix":
		run = unixSocket
	default:
		if b, err := strconv.Atoi(strings.TrimPrefix(*mode, "spawn-")); strings.HasPrefix(*mode, "spawn-") && err == nil && b > 0 {
			run = spawner(b)
			break
		}
		fmt.Fprintf(os.Stderr, "xfiber-bench-go: -mode must be gosched, chan, unix or spawn-B (B > 0), not %q\n", *mode)
		os.Exit(2)
	}
	if *n <= 0 || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "xfiber-bench-go: usage: xfiber-bench-go -mode gosched|chan|unix|spawn-B -n N (N > 0)")
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
