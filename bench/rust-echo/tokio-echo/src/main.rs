//! tokio-echo [--workers N] [--port P]: a TCP echo server on tokio's
//! multi-thread runtime with N worker threads (default 1).

#[path = "../../args.rs"]
mod args;
use std::io::Write;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

async fn echo(mut s: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if s.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn main() {
    let (workers, port) = args::parse("tokio-echo");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_io()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        // TcpListener::bind would listen with std's backlog of 128, too few
        // for 1,000 connections opened at once (SYNs dropped, retried 1 s later).
        let listen = || -> std::io::Result<_> {
            let s = TcpSocket::new_v4()?;
            s.set_reuseaddr(true)?;
            s.bind(([127, 0, 0, 1], port).into())?;
            s.listen(4096)
        };
        let ln = listen().unwrap_or_else(|e| {
            eprintln!("tokio-echo: listen: {e}");
            std::process::exit(1)
        });
        let port = ln.local_addr().unwrap().port();
        let mut out = std::io::stdout();
        writeln!(out, "listening on 127.0.0.1:{port}").unwrap();
        out.flush().unwrap();
        // Accept on a worker so the block_on thread only waits.
        tokio::spawn(async move {
            loop {
                match ln.accept().await {
                    Ok((s, _)) => {
                        let _ = s.set_nodelay(true);
                        tokio::spawn(echo(s));
                    }
                    Err(e) => eprintln!("tokio-echo: accept: {e}"),
                }
            }
        })
        .await
        .unwrap();
    });
}
