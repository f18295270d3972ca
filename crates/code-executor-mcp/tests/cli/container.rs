//! The container image (docs/container.md): built once per test process by
//! `scripts/build-image.sh` from this build's binary, then run with Podman as docs/container.md
//! tells users to: an execution with an upstream call in TypeScript and Python with the sandbox
//! enforced, `doctor` without the flags naming each missing one, and the compose file serving
//! HTTP with the token from its secret.
//!
//! Needs root, podman, debootstrap and podman-compose (`scripts/setup-container-tools.sh`).
//! Without them each test prints `SKIP: ...` and passes, unless
//! `CODE_EXECUTOR_REQUIRE_CONTAINER=1` (set by `.ci/run`), where it fails instead. A broken
//! build always fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::http::{Generation, McpHttp};

mod matrix;

const REQUIRE: &str = "CODE_EXECUTOR_REQUIRE_CONTAINER";
const IMAGE: &str = "localhost/code-executor-mcp:test";
const TOKEN: &str = "container-test-token-5b1d0c7e9a2f";
/// The image's user (deploy/container/Containerfile).
const UID: u32 = 10001;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn seccomp_profile() -> String {
    repo()
        .join("deploy/container/seccomp.json")
        .canonicalize()
        .expect("deploy/container/seccomp.json")
        .display()
        .to_string()
}

/// The Podman flags of docs/container.md (checked against the document below).
fn documented_flags() -> Vec<String> {
    vec![
        "--read-only".into(),
        "--cap-drop=ALL".into(),
        "--security-opt=no-new-privileges".into(),
        format!("--security-opt=seccomp={}", seccomp_profile()),
        "--security-opt=unmask=/proc/*".into(),
        // The audit log's place: without it /readyz fails (the trail is not lost silently).
        "-v".into(),
        "code-executor-state:/home/code-executor".into(),
    ]
}

struct Env {
    dir: PathBuf,
    /// CONTAINERS_CONF for this host's quirks, if it has any (see [`host_quirks`]).
    conf: Option<PathBuf>,
}

enum Unusable {
    /// Tools or privileges missing: SKIP, or a failure in CI.
    Unavailable(String),
    /// Everything there, but the build failed: always a failure.
    Broken(String),
}

fn env() -> Option<&'static Env> {
    static ENV: OnceLock<Result<Env, Unusable>> = OnceLock::new();
    match ENV.get_or_init(build) {
        Ok(env) => Some(env),
        Err(Unusable::Broken(why)) => panic!("the container image cannot be built: {why}"),
        Err(Unusable::Unavailable(why)) if std::env::var_os(REQUIRE).is_some() => {
            panic!("container tests cannot run ({REQUIRE} is set): {why}")
        }
        Err(Unusable::Unavailable(why)) => {
            eprintln!(
                "\n==================== SKIP: container tests: {why} (scripts/setup-container-tools.sh \
                 installs the tools; {REQUIRE}=1 makes this a failure) ====================\n"
            );
            None
        }
    }
}

fn found(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn build() -> Result<Env, Unusable> {
    let uid = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default();
    if uid != "0" {
        return Err(Unusable::Unavailable(
            "not root (debootstrap and rootful podman need it)".into(),
        ));
    }
    for tool in ["podman", "debootstrap", "podman-compose"] {
        if !found(tool) {
            return Err(Unusable::Unavailable(format!("{tool} is not installed")));
        }
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("container");
    std::fs::create_dir_all(&dir).map_err(|e| Unusable::Broken(e.to_string()))?;
    let conf = host_quirks(&dir).map_err(Unusable::Broken)?;
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(repo().join("scripts/build-image.sh"))
        .args(["--binary", env!("CARGO_BIN_EXE_code-executor-mcp")])
        .args(["--tag", IMAGE, "--out"])
        .arg(dir.join("context"))
        .output()
        .map_err(|e| Unusable::Broken(format!("cannot run build-image.sh: {e}")))?;
    if !out.status.success() {
        return Err(Unusable::Broken(format!(
            "build-image.sh failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    eprintln!(
        "container image {IMAGE} built in {:.1} s:\n{}",
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stderr)
    );
    // The secret and the config: readable by the image's user only.
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("alice={TOKEN}\n"))
        .map_err(|e| Unusable::Broken(e.to_string()))?;
    chown_private(&tokens)?;
    let fixture = test_support::workspace_bin("fixture-server");
    std::fs::copy(&fixture, dir.join("fixture-server"))
        .map_err(|e| Unusable::Broken(e.to_string()))?;
    std::fs::write(
        dir.join("mcp.json"),
        json!({"mcpServers": {"fx": {"command": "/opt/fixture/fixture-server", "args": ["fx"]}}})
            .to_string(),
    )
    .map_err(|e| Unusable::Broken(e.to_string()))?;
    Ok(Env { dir, conf })
}

fn chown_private(path: &Path) -> Result<(), Unusable> {
    use std::os::unix::fs::PermissionsExt;
    std::os::unix::fs::chown(path, Some(UID), Some(UID))
        .map_err(|e| Unusable::Broken(e.to_string()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Unusable::Broken(e.to_string()))
}

/// Settings this host needs that a usual one does not, as a containers.conf (Podman reads
/// `CONTAINERS_CONF`): crun refuses cgroups mounted in hybrid v1/v2 mode (runc does not), and
/// without CAP_SYS_RESOURCE in the bounding set the runtime cannot raise the open-files and
/// processes limits to Podman's defaults. Neither is part of what the image needs.
fn host_quirks(dir: &Path) -> Result<Option<PathBuf>, String> {
    let mut engine = Vec::new();
    let mut containers = Vec::new();
    let hybrid = Path::new("/sys/fs/cgroup/unified").is_dir()
        && !Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    if hybrid {
        if !found("runc") {
            return Err(
                "cgroups in hybrid mode need runc (crun refuses them): apt-get install runc".into(),
            );
        }
        engine.push("runtime = \"runc\"".to_string());
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let bounding = status
        .lines()
        .find_map(|l| l.strip_prefix("CapBnd:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(u64::MAX);
    const CAP_SYS_RESOURCE: u32 = 24;
    if bounding & (1 << CAP_SYS_RESOURCE) == 0 {
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        let hard = |name: &str| {
            limits
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l[name.len()..].split_whitespace().nth(1).map(str::to_owned))
                .unwrap_or_else(|| "4096".into())
        };
        let nofile = hard("Max open files");
        containers.push(format!(
            "default_ulimits = [\"nofile={nofile}:{nofile}\", \"nproc=4096:4096\"]"
        ));
    }
    if engine.is_empty() && containers.is_empty() {
        return Ok(None);
    }
    let path = dir.join("containers.conf");
    let text = format!(
        "[containers]\n{}\n[engine]\n{}\n",
        containers.join("\n"),
        engine.join("\n")
    );
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    Ok(Some(path))
}

impl Env {
    fn podman(&self) -> Command {
        let mut cmd = Command::new("podman");
        if let Some(conf) = &self.conf {
            cmd.env("CONTAINERS_CONF", conf);
        }
        cmd
    }

    fn run(&self, args: &[String]) -> Output {
        self.podman().args(args).output().expect("podman")
    }

    /// Starts the image detached with `flags`, the test's config, fixture upstream and tokens,
    /// serving on a free port of 127.0.0.1; waits until `/readyz` answers 200.
    fn start(&self, name: &str, flags: &[String]) -> Running<'_> {
        let _ = self.run(&["rm".into(), "-f".into(), name.into()]);
        let mut args: Vec<String> = vec!["run".into(), "-d".into(), "--name".into(), name.into()];
        args.extend(flags.iter().cloned());
        let d = self.dir.display();
        args.extend([
            "-p".into(),
            "127.0.0.1::3333".into(),
            "-v".into(),
            format!("{d}/mcp.json:/etc/code-executor-mcp/mcp.json:ro"),
            "-v".into(),
            format!("{d}/fixture-server:/opt/fixture/fixture-server:ro"),
            "-v".into(),
            format!("{d}/tokens:/run/secrets/code-executor-tokens:ro"),
            IMAGE.into(),
        ]);
        let out = self.run(&args);
        assert!(out.status.success(), "podman run: {}", text(&out));
        let mut running = Running {
            env: self,
            name: name.to_owned(),
            port: 0,
        };
        let port = self.run(&["port".into(), name.into(), "3333".into()]);
        let port: u16 = String::from_utf8_lossy(&port.stdout)
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("podman port: {}", text(&port)));
        running.port = port;
        running.wait_ready();
        running
    }
}

/// A started container; removed on drop.
struct Running<'a> {
    env: &'a Env,
    name: String,
    port: u16,
}

impl Running<'_> {
    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn logs(&self) -> String {
        text(&self.env.run(&["logs".into(), self.name.clone()]))
    }

    fn wait_ready(&self) {
        wait_ready(&self.base(), &|| self.logs());
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let _ = self.env.run(&[
            "rm".into(),
            "-f".into(),
            "-t".into(),
            "2".into(),
            self.name.clone(),
        ]);
    }
}

/// Polls `/readyz` (the server is up and its workers can start) for up to 60 s.
fn wait_ready(base: &str, logs: &dyn Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if http_status(&format!("{base}/readyz")) == Some(200) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{base} not ready after 60 s:\n{}",
            logs()
        );
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The status of a GET, over a plain socket: [`wait_ready`] runs outside async code.
fn http_status(url: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let (host, path) = url.strip_prefix("http://")?.split_once('/')?;
    let mut s = std::net::TcpStream::connect(host).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.split_whitespace().nth(1)?.parse().ok()
}

/// structuredContent and isError of a tools/call result.
fn outcome(r: Value) -> (Value, bool) {
    (
        r["structuredContent"].clone(),
        r["isError"].as_bool().unwrap_or(false),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_execution_calls_an_upstream_from_typescript_and_python_with_the_sandbox_enforced() {
    let Some(env) = env() else { return };
    let c = env.start("cem-test-exec", &documented_flags());

    // The running server's own `doctor`, in the container: every layer in force.
    let doctor = env.run(&[
        "exec".into(),
        c.name.clone(),
        "/usr/local/bin/code-executor-mcp".into(),
        "doctor".into(),
    ]);
    let report = text(&doctor);
    assert!(doctor.status.success(), "doctor in the container: {report}");
    assert!(report.contains("minimum guarantee met"), "{report}");
    assert!(!report.contains("MISSING"), "{report}");
    assert!(report.contains("container: podman"), "{report}");

    let url = format!("{}/mcp", c.base());
    let client = McpHttp::connect(&url, Some(TOKEN), Generation::Sessions).await;

    let (v, is_error) = client
        .exec(
            json!({"code": "const s = await tools.fx.add({a: 2, b: 3}); \
                              const e = await tools.fx.echo({message: 'from the container'}); \
                              return {sum: s.sum, echo: e}"}),
        )
        .await;
    assert!(!is_error, "TypeScript in the container: {v}\n{}", c.logs());
    assert_eq!(v["result"]["sum"].as_f64(), Some(5.0), "{v}");
    assert!(
        v["result"]["echo"]
            .to_string()
            .contains("from the container"),
        "{v}"
    );

    // Python: the upstream call, and what the code can see of the container: not its files
    // (the config naming the upstream, /etc, /home), not its network, not its processes.
    let r = client
        .call(
            "execute_python",
            json!({"code": r#"
import os, socket
r = tools.fx.add(a=4, b=5)
def attempt(f):
    try:
        f()
        return "allowed"
    except OSError as e:
        return type(e).__name__
{
    "sum": r["sum"],
    "root": sorted(os.listdir("/")),
    "config": attempt(lambda: open("/etc/code-executor-mcp/mcp.json").read()),
    "passwd": attempt(lambda: open("/etc/passwd").read()),
    "inet": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
    "uid": os.getuid(),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
}
"#}),
        )
        .await;
    let (v, is_error) = outcome(r);
    assert!(!is_error, "Python in the container: {v}\n{}", c.logs());
    let r = &v["result"];
    assert_eq!(r["sum"].as_f64(), Some(9.0), "{v}");
    for hidden in ["etc", "home", "run", "opt"] {
        assert!(
            !r["root"]
                .as_array()
                .is_some_and(|a| a.contains(&json!(hidden))),
            "/{hidden} is visible to the code: {v}"
        );
    }
    assert_ne!(r["config"], "allowed", "{v}");
    assert_ne!(r["passwd"], "allowed", "{v}");
    assert_ne!(r["inet"], "allowed", "{v}");
    assert_eq!(r["uid"], 1000, "{v}");
    // Only the sandbox's own processes: its init, the interpreter (and maybe one more).
    let pids = r["pids"].as_array().map_or(0, Vec::len);
    assert!(
        (1..=3).contains(&pids),
        "the host's processes are visible: {v}"
    );
}

#[test]
fn doctor_in_a_container_without_the_flags_fails_closed_and_names_each_missing_one() {
    let Some(env) = env() else { return };
    let doctor = |flags: &[String]| {
        let mut args: Vec<String> = vec!["run".into(), "--rm".into()];
        args.extend(flags.iter().cloned());
        args.extend([IMAGE.into(), "doctor".into()]);
        env.run(&args)
    };

    // The runtime's defaults: refused, and both fixes named.
    let out = doctor(&[]);
    let report = text(&out);
    assert!(
        !out.status.success(),
        "doctor passed without the flags: {report}"
    );
    assert!(report.contains("REFUSING to run code"), "{report}");
    assert!(report.contains("MISSING seccomp profile"), "{report}");
    assert!(report.contains("deploy/container/seccomp.json"), "{report}");
    assert!(report.contains("MISSING unmasked /proc"), "{report}");
    assert!(report.contains("--security-opt unmask=/proc/*"), "{report}");
    assert!(
        report.contains("--security-opt systempaths=unconfined"),
        "{report}"
    );
    assert!(report.contains("js worker: FAILED"), "{report}");
    assert!(report.contains("python worker: FAILED"), "{report}");

    // With the profile only: the /proc fix is what is left.
    let seccomp = format!("--security-opt=seccomp={}", seccomp_profile());
    let out = doctor(&[seccomp]);
    let report = text(&out);
    assert!(
        !out.status.success(),
        "doctor passed with a masked /proc: {report}"
    );
    assert!(!report.contains("MISSING seccomp profile"), "{report}");
    assert!(report.contains("MISSING unmasked /proc"), "{report}");
    assert!(report.contains("mount proc: EPERM"), "{report}");

    // With /proc unmasked only: the profile is what is left.
    let out = doctor(&["--security-opt=unmask=/proc/*".into()]);
    let report = text(&out);
    assert!(
        !out.status.success(),
        "doctor passed without the profile: {report}"
    );
    assert!(report.contains("MISSING seccomp profile"), "{report}");
    assert!(!report.contains("MISSING unmasked /proc"), "{report}");

    // And with every documented flag: healthy.
    let out = doctor(&documented_flags());
    assert!(
        out.status.success(),
        "doctor with the documented flags: {}",
        text(&out)
    );
}

/// Stops a compose project on drop.
struct Compose<'a> {
    env: &'a Env,
    dir: PathBuf,
    project: String,
}

impl Compose<'_> {
    fn cmd(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("podman-compose");
        if let Some(conf) = &self.env.conf {
            cmd.env("CONTAINERS_CONF", conf);
        }
        cmd.current_dir(&self.dir)
            .args(["-p", &self.project, "-f", "compose.yaml"])
            .args(args)
            .env("CODE_EXECUTOR_IMAGE", IMAGE)
            .output()
            .expect("podman-compose")
    }
}

impl Drop for Compose<'_> {
    fn drop(&mut self) {
        let _ = self.cmd(&["down", "-t", "2"]);
        let p = &self.project;
        for (kind, name) in [("volume", "code-executor-state"), ("network", "default")] {
            let _ = self
                .env
                .run(&[kind.into(), "rm".into(), "-f".into(), format!("{p}_{name}")]);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn compose_serves_http_with_the_token_from_its_secret_and_refuses_without_it() {
    let Some(env) = env() else { return };
    // The compose file as shipped, with its seccomp profile next to it; a tokens file and a
    // config where users put theirs.
    let dir = env.dir.join("compose");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("compose dir");
    for f in ["compose.yaml", "seccomp.json"] {
        std::fs::copy(repo().join("deploy/container").join(f), dir.join(f)).expect("copy");
    }
    std::fs::copy(env.dir.join("tokens"), dir.join("tokens")).expect("tokens");
    chown_private(&dir.join("tokens")).unwrap_or_else(|_| panic!("chown tokens"));
    std::fs::write(dir.join("mcp.json"), r#"{"mcpServers": {}}"#).expect("mcp.json");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let compose = Compose {
        env,
        dir: dir.clone(),
        project: format!("cemtest{}", std::process::id()),
    };
    let _ = compose.cmd(&["down", "-t", "1"]);

    // The file as podman-compose reads it: the `podman run` it makes carries the hardening
    // and the flags the sandbox needs (a dry run starts nothing).
    let dry = compose.cmd(&["--dry-run", "up", "-d"]);
    let resolved = text(&dry);
    assert!(
        dry.status.success(),
        "podman-compose --dry-run up: {resolved}"
    );
    let run = resolved
        .lines()
        .find(|l| l.starts_with("podman run "))
        .unwrap_or_else(|| panic!("no podman run in:\n{resolved}"));
    for expected in [
        "--read-only",
        "--cap-drop ALL",
        "--security-opt seccomp=./seccomp.json",
        "--security-opt systempaths=unconfined",
        "--security-opt no-new-privileges=true",
        "--tmpfs /tmp",
        "-u 10001:10001",
        "./tokens:/run/secrets/code-executor-tokens:ro",
        "--tokens-file /run/secrets/code-executor-tokens",
        "--http 0.0.0.0:3333",
        IMAGE,
    ] {
        assert!(run.contains(expected), "{expected} not in:\n{run}");
    }

    let mut up = Command::new("podman-compose");
    if let Some(conf) = &env.conf {
        up.env("CONTAINERS_CONF", conf);
    }
    let out = up
        .current_dir(&dir)
        .args(["-p", &compose.project, "-f", "compose.yaml", "up", "-d"])
        .env("CODE_EXECUTOR_IMAGE", IMAGE)
        .env("CODE_EXECUTOR_PORT", port.to_string())
        .output()
        .expect("podman-compose up");
    assert!(out.status.success(), "podman-compose up: {}", text(&out));
    let base = format!("http://127.0.0.1:{port}");
    let logs = || text(&compose.cmd(&["logs"]));
    wait_ready(&base, &logs);

    // No token, a wrong token: 401 with a Bearer challenge.
    let url = format!("{base}/mcp");
    for token in [None, Some("not-the-token-but-long-enough")] {
        let r = McpHttp::new(&url, token, Generation::Sessions)
            .request(
                "initialize",
                json!({"protocolVersion": Generation::Sessions.version(), "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}),
            )
            .await;
        assert_eq!(r.status, 401, "token {token:?}: {r:?}");
        assert!(
            r.header("www-authenticate")
                .is_some_and(|h| h.starts_with("Bearer")),
            "{r:?}"
        );
    }
    // The secret's token: served, and code runs sandboxed.
    let client = McpHttp::connect(&url, Some(TOKEN), Generation::Sessions).await;
    let (v, is_error) = client.exec(json!({"code": "return 40 + 2"})).await;
    assert!(!is_error && v["result"] == 42, "{v}\n{}", logs());
    let r = client
        .call(
            "execute_python",
            json!({"code": "import os\nsorted(os.listdir('/run'))"}),
        )
        .await;
    let (v, is_error) = outcome(r);
    // /run (where the secret is) is not in the sandbox's view.
    assert!(is_error || v["result"] != json!(["secrets"]), "{v}");
}

/// The flags the tests run with are the ones docs/container.md gives, and the compose file
/// carries their compose spelling. (No container needed.)
#[test]
fn docs_and_compose_carry_the_flags_the_tests_use() {
    let docs =
        std::fs::read_to_string(repo().join("docs/container.md")).expect("docs/container.md");
    for flag in documented_flags() {
        let flag = flag.replace(&seccomp_profile(), "deploy/container/seccomp.json");
        assert!(
            docs.contains(&flag),
            "docs/container.md does not give {flag}"
        );
    }
    for docker in [
        "--security-opt seccomp=deploy/container/seccomp.json",
        "--security-opt systempaths=unconfined",
        "--tmpfs /tmp",
    ] {
        assert!(
            docs.contains(docker),
            "docs/container.md does not give {docker}"
        );
    }
    let compose =
        std::fs::read_to_string(repo().join("deploy/container/compose.yaml")).expect("compose");
    for line in [
        "read_only: true",
        "- seccomp=./seccomp.json",
        "- systempaths=unconfined",
        "- no-new-privileges=true",
        "- ALL",
        "- /tmp",
        "/run/secrets/code-executor-tokens",
        "file: ./tokens",
        "code-executor-state:/home/code-executor",
        "\"${CODE_EXECUTOR_PORT:-3333}:3333\"",
    ] {
        assert!(compose.contains(line), "compose.yaml lacks {line}");
    }
}

/// The shipped profile allows the sandbox's syscalls unconditionally and nothing else beyond
/// the runtime default it was made from (deploy/container/seccomp-profile.py).
#[test]
fn the_seccomp_profile_adds_only_what_the_sandbox_needs() {
    let profile: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("deploy/container/seccomp.json")).expect("profile"),
    )
    .expect("JSON");
    assert_eq!(profile["defaultAction"], "SCMP_ACT_ERRNO");
    let rules = profile["syscalls"].as_array().expect("syscalls");
    let ours = &rules[0];
    let needed = [
        "unshare",
        "clone",
        "mount",
        "umount2",
        "pivot_root",
        "mount_setattr",
        "sethostname",
        "landlock_create_ruleset",
        "landlock_add_rule",
        "landlock_restrict_self",
    ];
    assert_eq!(ours["names"], json!(needed));
    assert_eq!(ours["action"], "SCMP_ACT_ALLOW");
    assert_eq!(ours["args"], json!([]));
    assert_eq!(ours["includes"], json!({}));
    for rule in &rules[1..] {
        for name in rule["names"].as_array().expect("names") {
            assert!(
                !needed.contains(&name.as_str().unwrap_or("")),
                "{name} also appears in {rule}"
            );
        }
    }
    // The generator, run on the runtime default installed here (containers-common), keeps
    // every other rule of it as it is and adds only the sandbox's rule.
    let default = Path::new("/usr/share/containers/seccomp.json");
    if !default.exists() {
        eprintln!(
            "note: no {} here: the generator is not re-run",
            default.display()
        );
        return;
    }
    let out = Command::new("python3")
        .arg(repo().join("deploy/container/seccomp-profile.py"))
        .arg(default)
        .output()
        .expect("python3");
    assert!(out.status.success(), "seccomp-profile.py: {}", text(&out));
    let made: Value = serde_json::from_slice(&out.stdout).expect("generated JSON");
    let source: Value =
        serde_json::from_str(&std::fs::read_to_string(default).expect("default")).expect("JSON");
    let made_rules = made["syscalls"].as_array().expect("syscalls");
    assert_eq!(made_rules[0], *ours);
    let strip = |rule: &Value| {
        let mut r = rule.clone();
        let names: Vec<Value> = r["names"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| !needed.contains(&n.as_str().unwrap_or("")))
            .cloned()
            .collect();
        r["names"] = json!(names);
        r
    };
    let kept: Vec<Value> = source["syscalls"]
        .as_array()
        .expect("syscalls")
        .iter()
        .map(strip)
        .filter(|r| r["names"].as_array().is_some_and(|n| !n.is_empty()))
        .collect();
    assert_eq!(made_rules[1..], kept[..]);
    assert_eq!(made["defaultAction"], source["defaultAction"]);
}

/// The image runs as its unprivileged user, and there is no shell to start in it.
#[test]
fn the_image_runs_as_a_non_root_user_and_holds_no_shell() {
    let Some(env) = env() else { return };
    let inspect = env.run(&[
        "image".into(),
        "inspect".into(),
        "--format".into(),
        "{{.Config.User}} {{json .Config.Entrypoint}}".into(),
        IMAGE.into(),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&inspect.stdout).trim(),
        r#"10001:10001 ["/usr/local/bin/code-executor-mcp"]"#,
        "{}",
        text(&inspect)
    );
    for shell in ["/bin/sh", "/bin/bash", "/usr/bin/dash"] {
        let out = env.run(&[
            "run".into(),
            "--rm".into(),
            "--entrypoint".into(),
            shell.into(),
            IMAGE.into(),
            "-c".into(),
            "true".into(),
        ]);
        assert!(
            !out.status.success(),
            "{shell} ran in the image: {}",
            text(&out)
        );
    }
}
