//! A scripted HTTP/1.1 server on loopback for the OpenAPI attack tests: it records every
//! request as it arrived (request line, headers, body) and answers each path as the test
//! says: a fixed answer, a redirect, a huge body, or nothing for a while (a slow server).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How to answer a path.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Status, content type, body.
    Fixed(u16, &'static str, Vec<u8>),
    /// A `302` to this location.
    Redirect(String),
    /// Headers sent, then nothing for this long.
    Slow(Duration),
    /// `200`, the request's line and headers back as `{"line": .., "head": ..}` (what a
    /// server that echoes credentials would send).
    EchoHead,
}

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Arrived {
    pub line: String,
    pub head: String,
    pub body: Vec<u8>,
}

/// The running server.
pub struct RawHttp {
    pub port: u16,
    pub arrived: Arc<Mutex<Vec<Arrived>>>,
}

impl RawHttp {
    /// Serves `routes` (by path without the query; anything else gets a JSON `{}`).
    pub fn start(routes: HashMap<String, Reply>) -> RawHttp {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let arrived = Arc::new(Mutex::new(Vec::new()));
        let log = arrived.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let routes = routes.clone();
                let log = log.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &routes, &log);
                });
            }
        });
        RawHttp { port, arrived }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Arrived> {
        self.arrived.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

fn serve(
    stream: std::net::TcpStream,
    routes: &HashMap<String, Reply>,
    log: &Mutex<Vec<Arrived>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
        head.push_str(&h);
    }
    let mut body = vec![0u8; length.min(1 << 20)];
    reader.read_exact(&mut body)?;
    let path = line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .split('?')
        .next()
        .unwrap_or("/")
        .to_string();
    if let Ok(mut l) = log.lock() {
        l.push(Arrived {
            line: line.trim_end().to_string(),
            head,
            body,
        });
    }
    let mut out = stream;
    match routes.get(&path).cloned() {
        Some(Reply::Redirect(to)) => write!(
            out,
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        Some(Reply::EchoHead) => {
            let last = log
                .lock()
                .ok()
                .and_then(|l| l.last().cloned())
                .map(|a| format!("{{\"line\": {:?}, \"head\": {:?}}}", a.line, a.head))
                .unwrap_or_default();
            write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{last}",
                last.len()
            )
        }
        Some(Reply::Slow(d)) => {
            write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
            )?;
            out.flush()?;
            std::thread::sleep(d);
            out.write_all(b"{}")
        }
        Some(Reply::Fixed(status, ct, bytes)) => {
            write!(
                out,
                "HTTP/1.1 {status} X\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                bytes.len()
            )?;
            out.write_all(&bytes)
        }
        None => out.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        ),
    }
}
