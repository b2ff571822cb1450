//! The command line both echo servers take: [--workers N] [--port P]
//! (one worker and any free port by default).  Shared by path
//! (`#[path]`), as the two crates share nothing else.
pub fn parse(name: &str) -> (usize, u16) {
    let (mut workers, mut port) = (1usize, 0u16);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let v = it.next().unwrap_or_default();
        match (a.as_str(), v.parse::<usize>()) {
            ("--workers", Ok(n)) if n > 0 => workers = n,
            ("--port", Ok(p)) if p <= 65535 => port = p as u16,
            _ => {
                eprintln!("usage: {name} [--workers N] [--port P]: N at least 1, P a port");
                std::process::exit(2);
            }
        }
    }
    (workers, port)
}
