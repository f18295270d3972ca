//! Prism mock servers (`@stoplight/prism-cli`, installed by `scripts/setup-interop.sh` under
//! `$PREFIX/openapi`) for the OpenAPI tests: one per document and per test binary, started on
//! first use and shared by every test of the binary ([`mocks`]). Readiness is polled (a
//! request that Prism answers from the document), never slept for. Each mock ends with the
//! test binary: a watchdog shell kills it once our process is gone.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where `@octokit/openapi` and Prism live under the interop prefix.
pub const PACKAGE_DIR: &str = "openapi/node_modules";
/// GitHub's document, under [`PACKAGE_DIR`].
pub const GITHUB_SPEC: &str = "@octokit/openapi/generated/api.github.com.json";
/// Longest a mock may take to answer its first request (GitHub's 13 MB document takes
/// Prism ~15 s on an idle machine).
const READY_WITHIN: Duration = Duration::from_secs(180);

/// The inventory document (YAML, API key, form bodies) shipped with this crate.
pub fn inventory_spec() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/inventory.yaml")
}

/// One running mock.
#[derive(Debug, Clone)]
pub struct Mock {
    pub port: u16,
    pub spec: PathBuf,
    pub log: PathBuf,
}

impl Mock {
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// The shared mocks: GitHub's document and the inventory one.
#[derive(Debug, Clone)]
pub struct Mocks {
    pub github: Mock,
    pub inventory: Mock,
}

/// The interop prefix's OpenAPI directory, when Prism and GitHub's document are installed.
pub fn installed(prefix: &Path) -> bool {
    let dir = prefix.join(PACKAGE_DIR);
    dir.join(".bin/prism").exists() && dir.join(GITHUB_SPEC).exists()
}

/// The mocks, started once per test binary (`prefix`: the interop prefix).
pub fn mocks(prefix: &Path) -> &'static Mocks {
    static MOCKS: OnceLock<Mocks> = OnceLock::new();
    MOCKS.get_or_init(|| {
        let dir = prefix.join(PACKAGE_DIR);
        let github = start(&dir, &dir.join(GITHUB_SPEC), "/repos/octocat/hello-world");
        let inventory = inventory(prefix).clone();
        wait_ready(&github, "/repos/octocat/hello-world");
        Mocks { github, inventory }
    })
}

/// The inventory mock alone (it starts in a second or two), once per test binary.
pub fn inventory(prefix: &Path) -> &'static Mock {
    static MOCK: OnceLock<Mock> = OnceLock::new();
    MOCK.get_or_init(|| {
        let dir = prefix.join(PACKAGE_DIR);
        let mock = start(&dir, &inventory_spec(), "/items/WID-0042");
        wait_ready(&mock, "/items/WID-0042");
        mock
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn start(dir: &Path, spec: &Path, _probe: &str) -> Mock {
    let port = free_port();
    let log = std::env::temp_dir().join(format!("prism-{}-{port}.log", std::process::id()));
    let prism = dir.join(".bin/prism");
    // The watchdog: Prism ends when this test binary does (statics are never dropped).
    let script = format!(
        "\"$0\" mock --dynamic=false -h 127.0.0.1 -p {port} \"$1\" >\"$2\" 2>&1 & P=$!; \
         while kill -0 {me} 2>/dev/null && kill -0 $P 2>/dev/null; do sleep 1; done; kill $P 2>/dev/null",
        me = std::process::id()
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(&prism)
        .arg(spec)
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prism");
    // Reaped when the watchdog ends (with the mock).
    std::thread::spawn(move || child.wait());
    Mock {
        port,
        spec: spec.to_path_buf(),
        log,
    }
}

/// Polls until the mock answers `probe` with any HTTP status line.
fn wait_ready(mock: &Mock, probe: &str) {
    let start = Instant::now();
    let mut pause = Duration::from_millis(50);
    while start.elapsed() < READY_WITHIN {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", mock.port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
            let req = format!(
                "GET {probe} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: probe\r\nConnection: close\r\n\r\n"
            );
            let mut head = [0u8; 12];
            if s.write_all(req.as_bytes()).is_ok()
                && s.read_exact(&mut head).is_ok()
                && head.starts_with(b"HTTP/1.1 ")
            {
                return;
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(500));
    }
    let log = std::fs::read_to_string(&mock.log).unwrap_or_default();
    panic!(
        "prism did not answer on port {} within {READY_WITHIN:?}; its log:\n{log}",
        mock.port
    );
}
