//! HAProxy in front of replicas of the server, run with the shipped configuration
//! (`deploy/haproxy/haproxy.cfg`, docs/kubernetes.md "Replicas and affinity"): the file as it
//! is, with its list of replicas (the lines between `# replicas: begin` and `# replicas: end`)
//! replaced by the test's, its `bind` and admin socket from `HAPROXY_BIND` and
//! `HAPROXY_ADMIN_SOCKET`. Replicas come and go at run time through the admin socket, as an
//! operator's script (or the Kubernetes variant's DNS discovery) adds and drains them.
//!
//! HAProxy is a Debian package (`apt-get install haproxy`, 2.6 or later), installed by
//! scripts/setup-interop.sh; without it [`haproxy_bin`] prints a loud SKIP, unless
//! `CODE_EXECUTOR_REQUIRE_HAPROXY=1` (set by scripts/test.sh) makes that a failure.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The shipped configuration.
pub fn shipped_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/haproxy/haproxy.cfg")
}

/// The `haproxy` binary, or `None` after a loud SKIP (a failure with
/// `CODE_EXECUTOR_REQUIRE_HAPROXY` set).
#[expect(
    clippy::print_stderr,
    reason = "a skipped test says so where the test output goes"
)]
pub fn haproxy_bin() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join("haproxy"))
        .find(|p| p.is_file());
    if found.is_none() {
        let msg =
            "haproxy is not installed (apt-get install haproxy; scripts/setup-interop.sh does)";
        if std::env::var_os("CODE_EXECUTOR_REQUIRE_HAPROXY").is_some() {
            panic!("{msg} (CODE_EXECUTOR_REQUIRE_HAPROXY is set)");
        }
        eprintln!("\n==================== SKIP: {msg} ====================\n");
    }
    found
}

/// `text` (the shipped configuration) with `servers` (`(name, "host:port")`) as its list of
/// replicas.
pub fn with_servers(text: &str, servers: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.trim() == "# replicas: end" {
            skipping = false;
        }
        if skipping {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if line.trim() == "# replicas: begin" {
            skipping = true;
            for (name, addr) in servers {
                out.push_str(&format!("    server {name} {addr}\n"));
            }
        }
    }
    assert!(
        out.contains("# replicas: end"),
        "the configuration has no replicas: begin/end block"
    );
    out
}

/// A running HAProxy; stopped when dropped.
pub struct Haproxy {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    pub socket: PathBuf,
    dir: PathBuf,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Haproxy {
    /// Starts `bin` with the shipped configuration and `servers`; returns once its admin
    /// socket answers and its frontend accepts connections.
    pub fn start(bin: &Path, servers: &[(String, String)]) -> Haproxy {
        let text = std::fs::read_to_string(shipped_config()).expect("read the shipped haproxy.cfg");
        Self::start_config(bin, &with_servers(&text, servers), &[])
    }

    /// Starts `bin` with the configuration `text` and `env` added to the process's; HAProxy
    /// gets its `bind` and admin socket from `HAPROXY_BIND` and `HAPROXY_ADMIN_SOCKET`.
    pub fn start_config(bin: &Path, text: &str, env: &[(&str, &str)]) -> Haproxy {
        let dir = std::env::temp_dir().join(format!(
            "cem-haproxy-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("haproxy dir");
        let cfg = dir.join("haproxy.cfg");
        std::fs::write(&cfg, text).expect("write haproxy.cfg");
        let socket = dir.join("admin.sock");
        let mut last = String::new();
        // The port is chosen before HAProxy binds it: another test may take it meanwhile.
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let log = dir.join("haproxy.log");
            let mut child = std::process::Command::new(bin)
                .args(["-db", "-f"])
                .arg(&cfg)
                .env("HAPROXY_BIND", format!("127.0.0.1:{port}"))
                .env("HAPROXY_ADMIN_SOCKET", &socket)
                .envs(env.iter().copied())
                .stdin(Stdio::null())
                .stdout(std::fs::File::create(&log).expect("haproxy log"))
                .stderr(std::fs::File::create(dir.join("haproxy.err")).expect("haproxy log"))
                .spawn()
                .expect("start haproxy");
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if std::os::unix::net::UnixStream::connect(&socket).is_ok()
                    && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                {
                    return Haproxy {
                        child,
                        url: format!("http://127.0.0.1:{port}/mcp"),
                        socket,
                        dir,
                    };
                }
                if let Ok(Some(status)) = child.try_wait() {
                    last = format!(
                        "haproxy exited ({status}):\n{}",
                        std::fs::read_to_string(dir.join("haproxy.err")).unwrap_or_default()
                    );
                    break;
                }
                assert!(Instant::now() < deadline, "haproxy did not start in 20 s");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("haproxy did not start: {last}");
    }

    /// HAProxy's own log (requests, health checks, servers going up and down).
    pub fn log(&self) -> String {
        let out = std::fs::read_to_string(self.dir.join("haproxy.log")).unwrap_or_default();
        let err = std::fs::read_to_string(self.dir.join("haproxy.err")).unwrap_or_default();
        format!("{out}{err}")
    }

    /// One command on the admin socket; its answer.
    pub fn admin(&self, command: &str) -> String {
        let mut s = std::os::unix::net::UnixStream::connect(&self.socket).expect("admin socket");
        s.set_read_timeout(Some(Duration::from_secs(10))).ok();
        s.write_all(format!("{command}\n").as_bytes())
            .expect("admin command");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// Each server of the `replicas` backend and its status (`UP`, `DOWN`, `MAINT`, `UP 1/2`...).
    pub fn statuses(&self) -> Vec<(String, String)> {
        let csv = self.admin("show stat");
        let mut header: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for line in csv.lines() {
            if let Some(h) = line.strip_prefix("# ") {
                header = h.split(',').map(str::to_string).collect();
                continue;
            }
            let cols: Vec<&str> = line.split(',').collect();
            let col = |name: &str| {
                header
                    .iter()
                    .position(|h| h == name)
                    .and_then(|i| cols.get(i))
                    .copied()
                    .unwrap_or("")
            };
            if col("pxname") == "replicas" && !matches!(col("svname"), "BACKEND" | "FRONTEND") {
                out.push((col("svname").to_string(), col("status").to_string()));
            }
        }
        out
    }

    /// The status of server `name`, if it is there.
    pub fn status(&self, name: &str) -> Option<String> {
        self.statuses()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
    }

    /// Polls until `name`'s status satisfies `ok`, for at most `within`; the time it took.
    pub fn wait_status(
        &self,
        name: &str,
        within: Duration,
        ok: impl Fn(Option<&str>) -> bool,
    ) -> Result<Duration, String> {
        let start = Instant::now();
        loop {
            let status = self.status(name);
            if ok(status.as_deref()) {
                return Ok(start.elapsed());
            }
            if start.elapsed() > within {
                return Err(format!("{name}: {status:?} after {within:?}"));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Adds replica `name` at `addr` (health-checked like the configured ones) and waits
    /// until HAProxy has it UP.
    pub fn add_replica(&self, name: &str, addr: &str) {
        let out = self.admin(&format!(
            "add server replicas/{name} {addr} check inter 1s fall 2 rise 2 observe layer4 error-limit 1 on-error mark-down"
        ));
        assert!(
            out.contains("New server registered"),
            "add server {name}: {out}"
        );
        for cmd in ["enable health", "enable server"] {
            let out = self.admin(&format!("{cmd} replicas/{name}"));
            assert!(out.trim().is_empty(), "{cmd} {name}: {out}");
        }
        self.wait_status(name, Duration::from_secs(30), |s| s == Some("UP"))
            .unwrap_or_else(|e| panic!("the new replica never came up: {e}\n{}", self.log()));
    }

    /// Takes replica `name` out (maintenance) and deletes it once HAProxy lets it (no
    /// connection left on it).
    pub fn remove_replica(&self, name: &str) {
        let out = self.admin(&format!("set server replicas/{name} state maint"));
        assert!(out.trim().is_empty(), "maint {name}: {out}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self.admin(&format!("del server replicas/{name}"));
            if out.contains("Server deleted") {
                return;
            }
            assert!(Instant::now() < deadline, "del server {name}: {out}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_of_replicas_is_replaced_and_nothing_else() {
        let text = std::fs::read_to_string(shipped_config()).unwrap();
        let out = with_servers(&text, &[("a1".into(), "127.0.0.1:9".into())]);
        assert!(out.contains("    server a1 127.0.0.1:9\n"), "{out}");
        assert_eq!(out.matches("\n    server ").count(), 1, "{out}");
        let strip = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| !l.trim_start().starts_with("server "))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(strip(&text), strip(&out));
    }

    #[test]
    fn docs_kubernetes_shows_the_shipped_configuration() {
        let text = std::fs::read_to_string(shipped_config()).unwrap();
        let body = &text[text.find("\nglobal\n").unwrap() + 1..];
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/kubernetes.md"),
        )
        .unwrap();
        assert!(
            doc.contains(body),
            "docs/kubernetes.md must show deploy/haproxy/haproxy.cfg as it is (from `global` on)"
        );
    }
}
