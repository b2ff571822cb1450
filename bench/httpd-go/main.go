// Command xfiber-httpd-go is the Go peer of `xfiber bench server`:
// examples/httpd.c's routes on net/http, with the same work.
//
//	xfiber-httpd-go [-port P] [-workers N] [-echo]
//
// GOMAXPROCS is the number of workers (default 1).  The first line printed
// is "listening on 127.0.0.1:PORT".  GET / answers "ok"; GET /spin?us=N
// runs N microseconds of the vector work of examples/spin.c (spin.go) and
// answers its checksum; POST /echo answers the body (up to 1 MiB); the rest
// is 404.  SIGINT or SIGTERM: in-flight requests finish, then exit 0.
//
// -echo serves examples/echo.c's protocol instead, the peer of the echo
// rows: every byte a connection sends comes back, a goroutine per
// connection reading and writing through a 4 KiB buffer, as echo.c does.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

const spinUsMax = 1000000

func root(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok")
}

func spin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	us, err := strconv.ParseUint(r.URL.Query().Get("us"), 10, 64)
	if err != nil || us > spinUsMax {
		http.Error(w, "us=MICROSECONDS, at most 1000000", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%016x\n", spinWork(us))
}

func echo(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write(body)
}

func main() {
	port := flag.Int("port", 0, "port to listen on (0: any free one)")
	workers := flag.Int("workers", 1, "GOMAXPROCS")
	echoOnly := flag.Bool("echo", false, "a TCP echo server instead")
	flag.Parse()
	runtime.GOMAXPROCS(*workers)

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "xfiber-httpd-go:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	os.Stdout.Sync()
	if *echoOnly {
		serveEcho(ln)
		return
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/", root)
	mux.HandleFunc("/spin", spin)
	mux.HandleFunc("/echo", echo)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		<-stop
		srv.Shutdown(context.Background())
		close(done)
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "xfiber-httpd-go:", err)
		os.Exit(1)
	}
	<-done
}

func serveEcho(ln net.Listener) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		os.Exit(0)
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "xfiber-httpd-go:", err)
			os.Exit(1)
		}
		go func(c net.Conn) {
			defer c.Close()
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}(c)
	}
}
