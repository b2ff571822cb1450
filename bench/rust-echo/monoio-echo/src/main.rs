//! monoio-echo [--workers N] [--port P]: a TCP echo server on monoio's
//! io_uring driver, thread per core: N threads, each with its own runtime
//! and its own SO_REUSEPORT listener on the same port (as monoio's
//! #[monoio::main(threads = N)] examples do), the kernel spreading
//! connections among them.

#[path = "../../args.rs"]
mod args;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::mpsc;

use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{ListenerOpts, TcpListener, TcpStream};
use monoio::{IoUringDriver, RuntimeBuilder};

async fn echo(mut s: TcpStream) {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        let (r, b) = s.read(buf).await;
        buf = b;
        match r {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let (r, b) = s.write_all(buf).await;
        buf = b;
        if r.is_err() {
            return;
        }
        buf.clear();
    }
}

/// One worker: its own io_uring runtime and listener.  Sends the bound
/// port (or the error) on `ready` before serving.
fn worker(addr: SocketAddr, ready: mpsc::Sender<Result<u16, String>>) {
    let mut rt = match RuntimeBuilder::<IoUringDriver>::new().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("io_uring refused by the kernel: {e}")));
            return;
        }
    };
    rt.block_on(async move {
        let opts = ListenerOpts::default().reuse_port(true).backlog(4096);
        let ln = match TcpListener::bind_with_config(addr, &opts) {
            Ok(ln) => ln,
            Err(e) => {
                let _ = ready.send(Err(format!("bind {addr}: {e}")));
                return;
            }
        };
        let _ = ready.send(Ok(ln.local_addr().unwrap().port()));
        drop(ready);
        loop {
            match ln.accept().await {
                Ok((s, _)) => {
                    let _ = s.set_nodelay(true);
                    monoio::spawn(echo(s));
                }
                Err(e) => eprintln!("monoio-echo: accept: {e}"),
            }
        }
    });
}

fn start(addr: SocketAddr) -> (std::thread::JoinHandle<()>, u16) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || worker(addr, tx));
    match rx.recv() {
        Ok(Ok(port)) => (h, port),
        Ok(Err(e)) => {
            eprintln!("monoio-echo: {e}");
            std::process::exit(1)
        }
        Err(_) => {
            eprintln!("monoio-echo: worker died");
            std::process::exit(1)
        }
    }
}

fn main() {
    let (workers, port) = args::parse("monoio-echo");
    // The first worker picks the port (if 0); the others bind the same one.
    let (first, port) = start(SocketAddr::from(([127, 0, 0, 1], port)));
    let mut threads = vec![first];
    for _ in 1..workers {
        threads.push(start(SocketAddr::from(([127, 0, 0, 1], port))).0);
    }
    let mut out = std::io::stdout();
    writeln!(out, "listening on 127.0.0.1:{port}").unwrap();
    out.flush().unwrap();
    for t in threads {
        let _ = t.join();
    }
}
