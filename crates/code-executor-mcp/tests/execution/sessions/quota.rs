//! The workspace quota as a bound on the host's disk and inodes (issue 39, item 3): whatever
//! the depth of the tree, the number of entries (empty files, hard links), sparse files,
//! `fallocate`, concurrent writers in both languages, or a history of failed runs, what `du`
//! finds in the workspace on the host never exceeds `workspaceQuotaMb` bytes of blocks and
//! `workspaceMaxEntries` inodes. The last test checks it over random trees, depths and
//! writers, and prints the largest workspace any case made.
//!
//! The bound is the kernel's (a size- and inode-limited tmpfs the server mounts): a server
//! that cannot mount (not root, no CAP_SYS_ADMIN) only measures, which cannot bound
//! concurrent writers, so these tests fail under CODE_EXECUTOR_REQUIRE_SANDBOX=1 there and
//! skip loudly otherwise.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

const MIB: u64 = 1 << 20;

/// What `du` says `dir` holds: bytes of allocated blocks (a hard-linked inode once) and
/// inodes, the directory itself not counted. `du` walks trees of any depth.
fn du(dir: &Path) -> (u64, u64) {
    let field = |args: &[&str]| -> u64 {
        let out = std::process::Command::new("du")
            .args(args)
            .arg(dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "du {args:?} {}: {text} {}",
                    dir.display(),
                    String::from_utf8_lossy(&out.stderr)
                )
            })
    };
    let bytes = field(&["-s", "-B1"]);
    let inodes = field(&["-s", "--inodes"]).saturating_sub(1);
    (bytes, inodes)
}

/// A session's workspace and its bound, with the largest usage seen.
struct Watched {
    ws: std::path::PathBuf,
    quota: u64,
    entries: u64,
    largest: (u64, u64),
}

impl Watched {
    /// `None` (after a loud skip, or a failure when the sandbox is required) when the server
    /// could not bound the workspace with the kernel.
    fn new(id: &str, quota_mb: u64, entries: u64) -> Option<Watched> {
        use std::os::unix::fs::MetadataExt;
        let ws = host_workspace(id);
        let dev = |p: &Path| std::fs::metadata(p).unwrap().dev();
        if dev(&ws) == dev(ws.parent().unwrap()) {
            test_support::skip_or_fail_sandbox(
                "the server could not mount a bounded tmpfs on the session's workspace (it \
                 needs root or CAP_SYS_ADMIN); only the host's measurement bounds it",
            );
            return None;
        }
        Some(Watched {
            ws,
            quota: quota_mb * MIB,
            entries,
            largest: (0, 0),
        })
    }

    /// Asserts the bound now; `what` names the moment.
    fn check(&mut self, what: &str) -> (u64, u64) {
        let (bytes, inodes) = du(&self.ws);
        assert!(
            bytes <= self.quota && inodes <= self.entries,
            "{what}: the workspace holds {bytes} bytes in {inodes} inodes, past its bound of \
             {} bytes and {} entries",
            self.quota,
            self.entries
        );
        self.largest = (self.largest.0.max(bytes), self.largest.1.max(inodes));
        (bytes, inodes)
    }
}

/// Asserts a run was refused for the quota.
fn assert_quota_error(v: &Value) {
    assert_eq!(error_name(v), "LimitError", "{v}");
    let m = error_message(v);
    assert!(
        m.contains("workspaceQuotaMb") && m.contains("delete files"),
        "{v}"
    );
}

#[tokio::test]
async fn the_workspace_quota_holds() {
    let (h, _d) = server(json!({"sessions": {"workspaceQuotaMb": 1}})).await;
    let (id, _) = new_session(&h, Lang::Py, "open('small', 'wb').write(b'x' * 1000)").await;
    let Some(mut w) = Watched::new(&id, 1, 10_000) else {
        return;
    };
    // One file past the quota: the write stops at the bound (the file-size limit, or the
    // workspace full), and the run, which hit it, fails.
    let (v, is_error) = run(
        &h,
        Lang::Py,
        json!({"code": "try:\n    open('big', 'wb').write(b'x' * (2 << 20))\nexcept OSError as e:\n    print(e.strerror)", "session": id}),
    )
    .await;
    assert!(is_error, "{v}");
    assert_quota_error(&v);
    let said = v["logs"][0]["text"].as_str().unwrap_or("");
    assert!(
        ["File too large", "No space left on device"].contains(&said),
        "{v}"
    );
    w.check("after one file past the quota");
    let v = ok_in(
        &h,
        Lang::Py,
        &id,
        "import os\nos.path.getsize('big') <= 1 << 20",
    )
    .await;
    assert_eq!(v["result"], json!(true), "{v}");
    ok_in(&h, Lang::Py, &id, "import os\nos.remove('big')").await;
    // Many files under the limit each: the run fails, the bound holds.
    let (v, is_error) = run(
        &h,
        Lang::Py,
        json!({"code": "for i in range(100):\n    open('part%d' % i, 'wb').write(b'x' * 100_000)", "session": id}),
    )
    .await;
    assert!(is_error, "{v}");
    assert_quota_error(&v);
    w.check("after many files");
    // The files written are kept (nothing is lost), and cleaning up works.
    let v = ok_in(
        &h,
        Lang::Py,
        &id,
        "import os\nn = len(os.listdir('.'))\nfor f in os.listdir('.'):\n    os.remove(f)\nn > 1",
    )
    .await;
    assert_eq!(v["result"], json!(true), "{v}");
    ok_in(&h, Lang::Py, &id, "open('again', 'wb').write(b'x' * 1000)").await;
}

/// (a) Directories nested far past PATH_MAX (relative mkdir and chdir) hide no bytes: what is
/// written at the bottom counts as anywhere else, and the server still deletes the tree.
#[tokio::test]
async fn a_workspace_nested_past_path_max_counts_every_level_and_is_still_deleted() {
    let (h, _d) = server(json!({"sessions": {"workspaceQuotaMb": 1}})).await;
    let (id, v) = new_session(&h, Lang::Py, "import os\nos.getcwd()").await;
    // The worker sees its workspace at a fixed path; the host's path stays hidden from it.
    assert_eq!(v["result"], json!("/workspace"), "{v}");
    let Some(mut w) = Watched::new(&id, 1, 10_000) else {
        return;
    };
    let deep = "import os\nfor _ in range(2000):\n    os.mkdir('d' * 200)\n    os.chdir('d' * 200)\n\
                for i in range(8):\n    open('hidden%d' % i, 'wb').write(b'x' * (256 << 10))";
    for attempt in 0..2 {
        let (v, is_error) = run(&h, Lang::Py, json!({"code": deep, "session": id})).await;
        w.check(&format!("after deep writes, attempt {attempt}"));
        if attempt == 0 {
            assert!(is_error, "{v}");
            assert_quota_error(&v);
        }
        // The second attempt fails on its first mkdir (the tree is there): still bounded.
        assert!(is_error, "{v}");
    }
    let (v, _) = run(
        &h,
        Lang::Py,
        json!({"code": "1", "session": id, "reset": true}),
    )
    .await;
    assert_eq!(v["session"]["ended"], json!("reset"), "{v}");
    assert!(
        !w.ws.exists(),
        "the workspace {} is deleted",
        w.ws.display()
    );
    // And the server still serves.
    let (v, is_error) = run(&h, Lang::Py, json!({"code": "2"})).await;
    assert!(!is_error, "{v}");
}

/// (b) Past `workspaceMaxEntries` nothing more is made: empty files, hard links (each name
/// counts) and directories, in both languages.
#[tokio::test]
async fn entries_past_the_limit_are_refused_whatever_their_kind() {
    let (h, _d) =
        server(json!({"sessions": {"workspaceQuotaMb": 1, "workspaceMaxEntries": 50}})).await;
    let (id, _) = new_session(&h, Lang::Py, "open('one', 'wb').write(b'1')").await;
    let Some(mut w) = Watched::new(&id, 1, 50) else {
        return;
    };
    let empty = "made = 0\nfor i in range(500):\n    try:\n        open('e%d' % i, 'wb').close()\n        made += 1\n    except OSError:\n        break\nmade";
    let (v, is_error) = run(&h, Lang::Py, json!({"code": empty, "session": id})).await;
    assert!(is_error, "{v}");
    assert_quota_error(&v);
    w.check("after 500 empty files");
    let v = ok_in(&h, Lang::Py, &id, "import os\nfor f in os.listdir('.'):\n    if f != 'one':\n        os.remove(f)\nlen(os.listdir('.'))").await;
    assert_eq!(v["result"], json!(1), "{v}");
    let links = "import os\nfor i in range(500):\n    try:\n        os.link('one', 'l%d' % i)\n    except OSError:\n        break\nlen(os.listdir('.'))";
    let (v, is_error) = run(&h, Lang::Py, json!({"code": links, "session": id})).await;
    assert!(is_error, "{v}");
    assert_quota_error(&v);
    let v = ok_in(&h, Lang::Py, &id, "import os\nlen(os.listdir('.'))").await;
    let names = v["result"].as_u64().unwrap();
    assert!(names <= 50, "{names} names for at most 50 entries");
    w.check("after 500 hard links");
    ok_in(
        &h,
        Lang::Py,
        &id,
        "import os\nfor f in os.listdir('.'):\n    os.remove(f)",
    )
    .await;
    // JavaScript, in its own session of the same server: directories and files.
    let (js, _) = new_session(&h, Lang::Ts, "return 1").await;
    let Some(mut wj) = Watched::new(&js, 1, 50) else {
        return;
    };
    let (v, is_error) = run(
        &h,
        Lang::Ts,
        json!({"session": js, "code": "let made = 0;\ntry {\n  for (let i = 0; i < 300; i++) {\n    fs.mkdirSync(`d${i}`);\n    fs.writeFileSync(`d${i}/f`, '');\n    made += 2;\n  }\n} catch (e) {}\nreturn made;"}),
    )
    .await;
    assert!(is_error, "{v}");
    assert_quota_error(&v);
    wj.check("after 300 directories from JavaScript");
}

/// Sparse files count by their blocks, and neither `fallocate` nor a size far past the quota
/// reserves more than the bound.
#[tokio::test]
async fn sparse_files_and_fallocate_stay_within_the_quota() {
    let (h, _d) = server(json!({"sessions": {"workspaceQuotaMb": 1}})).await;
    let (id, _) = new_session(&h, Lang::Py, "1").await;
    let Some(mut w) = Watched::new(&id, 1, 10_000) else {
        return;
    };
    let code = r#"
import os
out = {}
def attempt(name, f):
    try:
        f()
        out[name] = 'ok'
    except OSError as e:
        out[name] = e.strerror
def sparse_far():
    with open('sparse', 'wb') as f:
        f.truncate(1 << 40)
def sparse_holes():
    for i in range(64):
        with open('holes%d' % i, 'wb') as f:
            f.seek(900 << 10)
            f.write(b'y' * 8192)
def falloc():
    fd = os.open('falloc', os.O_CREAT | os.O_WRONLY)
    try:
        os.posix_fallocate(fd, 0, 4 << 20)
    finally:
        os.close(fd)
def falloc_fill():
    for i in range(8):
        fd = os.open('fill%d' % i, os.O_CREAT | os.O_WRONLY)
        try:
            os.posix_fallocate(fd, 0, 512 << 10)
        finally:
            os.close(fd)
attempt('sparse_far', sparse_far)
attempt('sparse_holes', sparse_holes)
attempt('falloc', falloc)
attempt('falloc_fill', falloc_fill)
print(out)
"#;
    let (v, is_error) = run(&h, Lang::Py, json!({"code": code, "session": id})).await;
    if is_error {
        assert_quota_error(&v);
    }
    let (bytes, _) = w.check("after sparse files and fallocate");
    assert!(bytes > 0, "something was written: {v}");
}

/// (c) Runs that fail the quota, one after another, cannot add up: each finds the bound where
/// the last left it.
#[tokio::test]
async fn failed_runs_cannot_add_up_past_the_quota() {
    let (h, _d) = server(json!({"sessions": {"workspaceQuotaMb": 1}})).await;
    let (id, _) = new_session(&h, Lang::Py, "1").await;
    let Some(mut w) = Watched::new(&id, 1, 10_000) else {
        return;
    };
    for round in 0..8 {
        let code = format!(
            "for i in range(20):\n    open('r{round}_%d' % i, 'wb').write(b'x' * (100 << 10))"
        );
        let (v, is_error) = run(&h, Lang::Py, json!({"code": code, "session": id})).await;
        assert!(is_error, "round {round}: {v}");
        assert_quota_error(&v);
        w.check(&format!("after failed run {round}"));
    }
    // Appending to a file already there grows nothing the kernel lets through: the refused
    // write is still the quota's error.
    let (v, is_error) = run(
        &h,
        Lang::Py,
        json!({"code": "open('r0_0', 'ab').write(b'x' * (100 << 10))", "session": id}),
    )
    .await;
    assert!(is_error, "{v}");
    assert_quota_error(&v);
    w.check("after appending to a full workspace");
    // Reading a full workspace is no error.
    ok_in(&h, Lang::Py, &id, "len(open('r0_0', 'rb').read())").await;
    // JavaScript fails the same way, in a session of its own.
    let (js, _) = new_session(&h, Lang::Ts, "return 1").await;
    let Some(mut wj) = Watched::new(&js, 1, 10_000) else {
        return;
    };
    for round in 0..4 {
        let code = format!(
            "for (let i = 0; i < 20; i++) fs.writeFileSync(`r{round}_${{i}}`, 'x'.repeat(100 << 10));"
        );
        let (v, is_error) = run(&h, Lang::Ts, json!({"code": code, "session": js})).await;
        assert!(is_error, "round {round}: {v}");
        assert_quota_error(&v);
        wj.check(&format!("after failed JavaScript run {round}"));
    }
}

/// Samples the workspace with `du` until `stop`, asserting the bound at each sample; returns
/// the largest bytes seen.
fn sample_until(ws: std::path::PathBuf, quota: u64, stop: Arc<AtomicBool>) -> u64 {
    let mut largest = 0;
    while !stop.load(Ordering::Acquire) {
        if !ws.exists() {
            break;
        }
        let (bytes, _) = du(&ws);
        assert!(
            bytes <= quota,
            "while writers ran: {bytes} bytes, past {quota}"
        );
        largest = largest.max(bytes);
    }
    largest
}

/// (d) Forty writers at once (Python threads; JavaScript's concurrent promises) never hold
/// more than the quota, at any moment sampled while they write, nor after.
#[tokio::test]
async fn concurrent_writers_cannot_overshoot_the_quota() {
    let (h, _d) = server(json!({"sessions": {"workspaceQuotaMb": 1}})).await;
    for lang in BOTH {
        let (id, _) = new_session(&h, lang, lang.pick("return 1", "1")).await;
        let Some(mut w) = Watched::new(&id, 1, 10_000) else {
            return;
        };
        let code = lang.pick(
            "await Promise.all(Array.from({length: 40}, async (_, i) => {\n  for (let k = 0; k < 64; k++) await fs.promises.appendFile(`w${i}`, 'x'.repeat(64 << 10));\n}));",
            "import threading\ndef w(i):\n    with open('w%d' % i, 'wb') as f:\n        for _ in range(64):\n            f.write(b'x' * (64 << 10))\n            f.flush()\nts = [threading.Thread(target=w, args=(i,)) for i in range(40)]\nfor t in ts:\n    t.start()\nfor t in ts:\n    t.join()",
        );
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (ws, stop) = (w.ws.clone(), stop.clone());
            tokio::task::spawn_blocking(move || sample_until(ws, MIB, stop))
        };
        let (v, is_error) = run(&h, lang, json!({"code": code, "session": id})).await;
        stop.store(true, Ordering::Release);
        let during = sampler.await.unwrap();
        assert!(is_error, "{lang:?}: {v}");
        assert_quota_error(&v);
        let (after, _) = w.check(&format!("{lang:?}: after 40 concurrent writers"));
        assert!(during <= MIB && after <= MIB);
    }
}

/// A small deterministic generator (xorshift64*), so a failing case can be replayed from the
/// seed the test prints.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One random case: the previous cases' files deleted or not, a tree `depth` levels deep
/// (relative chdir, past PATH_MAX for the deepest), `writers` threads each writing `chunks`
/// chunks of `chunk` bytes there, `links` hard links, a sparse file and `empties` empty
/// files.
fn random_case(rng: &mut Rng, case: u64) -> Value {
    const DEPTHS: [u64; 6] = [0, 1, 7, 130, 600, 1500];
    let depth = DEPTHS[rng.below(DEPTHS.len() as u64) as usize];
    json!({
        "case": case,
        "depth": depth,
        "empties": rng.below(300),
        "name": 1 + rng.below(200),
        "writers": 1 + rng.below(24),
        "chunks": 1 + rng.below(16),
        "chunk": rng.below(160 << 10),
        "links": rng.below(80),
        "sparse": rng.below(2 << 20),
        "clean": rng.below(2) == 0,
    })
}

const RANDOM_CASE: &str = r#"
import json, os, shutil, threading
p = json.loads(PARAMS)
if p['clean']:
    for f in os.listdir('.'):
        try:
            shutil.rmtree(f) if os.path.isdir(f) else os.remove(f)
        except Exception:
            pass
made = 0
try:
    os.mkdir('c%d' % p['case'])
    os.chdir('c%d' % p['case'])
    for _ in range(p['depth']):
        os.mkdir('d' * p['name'])
        os.chdir('d' * p['name'])
        made += 1
except OSError:
    pass
def writer(i):
    try:
        with open('f%d_%d' % (p['case'], i), 'wb') as f:
            for _ in range(p['chunks']):
                f.write(b'x' * p['chunk'])
                f.flush()
    except OSError:
        pass
# Up to 24 writers: past the sandbox's limit on threads a start fails (RuntimeError), and
# the case goes on with the writers that started.
ts = []
for i in range(p['writers']):
    t = threading.Thread(target=writer, args=(i,))
    try:
        t.start()
    except RuntimeError:
        break
    ts.append(t)
for t in ts:
    t.join()
try:
    open('base', 'wb').write(b'b' * 100)
    for i in range(p['links']):
        os.link('base', 'l%d' % i)
except OSError:
    pass
try:
    with open('sparse', 'wb') as f:
        f.seek(p['sparse'])
        f.write(b's' * 4096)
except OSError:
    pass
try:
    for i in range(p['empties']):
        open('e%d' % i, 'wb').close()
except OSError:
    pass
made
"#;

/// Property: over random trees, depths, writers, hard links and sparse files, with or
/// without cleaning up in between, `du` never finds more than the bound; each run either
/// succeeds or fails with the quota's error, and the session keeps serving.
#[tokio::test]
async fn the_quota_bounds_random_trees_depths_and_writers() {
    const CASES: u64 = 12;
    const ENTRIES: u64 = 2000;
    let seed = std::env::var("CODE_EXECUTOR_QUOTA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    eprintln!("quota property test: CODE_EXECUTOR_QUOTA_SEED={seed}");
    let mut rng = Rng(seed);
    let (h, _d) =
        server(json!({"sessions": {"workspaceQuotaMb": 1, "workspaceMaxEntries": ENTRIES}})).await;
    let (id, _) = new_session(&h, Lang::Py, "1").await;
    let Some(mut w) = Watched::new(&id, 1, ENTRIES) else {
        return;
    };
    for case in 0..CASES {
        let params = random_case(&mut rng, case);
        let code = RANDOM_CASE.replace("PARAMS", &format!("{:?}", params.to_string()));
        let (v, is_error) = run(&h, Lang::Py, json!({"code": code, "session": id})).await;
        if is_error {
            assert_quota_error(&v);
        }
        w.check(&format!("case {case} {params} (seed {seed})"));
    }
    eprintln!(
        "quota property test: the largest workspace under a 1 MiB, {ENTRIES}-entry bound: {} \
         bytes, {} inodes",
        w.largest.0, w.largest.1
    );
}
