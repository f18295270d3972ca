//! The audit log: one JSON line per execution start and end and per tool-call attempt,
//! allowed or denied, in a versioned schema.
//!
//! Code and arguments appear only as SHA-256 and length (arguments in full only when the
//! settings say so); results only as sizes; secrets never: the log holds nothing our
//! environment or the upstream config holds. The file is rotated by size, keeping
//! [`KEEP_ROTATED`] older files (`audit.jsonl.1` is the newest of them).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Version of the line format; bumped on any incompatible change.
pub const AUDIT_SCHEMA_VERSION: u32 = 1;
/// Default size at which the file is rotated.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Rotated files kept.
pub const KEEP_ROTATED: u32 = 3;

/// Audit settings (`audit` in the settings file).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditSettings {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Default: `$XDG_STATE_HOME/code-executor-mcp/audit.jsonl` (`~/.local/state/...`).
    pub path: Option<PathBuf>,
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
    /// Write tool arguments in full instead of as a hash. Off by default: arguments can hold
    /// personal data.
    #[serde(default)]
    pub log_arguments: bool,
}

fn yes() -> bool {
    true
}

fn default_max_bytes() -> u64 {
    DEFAULT_MAX_BYTES
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            enabled: true,
            path: None,
            max_bytes: DEFAULT_MAX_BYTES,
            log_arguments: false,
        }
    }
}

/// Our state directory: `$XDG_STATE_HOME/code-executor-mcp`, else `~/.local/state/...`.
pub fn state_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .map(|d| d.join("code-executor-mcp"))
}

/// The default audit file.
pub fn default_path() -> Option<PathBuf> {
    state_dir().map(|d| d.join("audit.jsonl"))
}

use super::error::AuditError;
pub use super::event::AuditEvent;

/// SHA-256 of bytes, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    use std::fmt::Write;
    let mut hex = String::with_capacity(64);
    for b in digest {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// The SHA-256 (hex) and length of `value`'s compact JSON, hashed as it is encoded: the same
/// digest as [`sha256_hex`] of `serde_json::to_vec(value)`, without holding a copy.
pub fn json_sha256_hex(value: &serde_json::Value) -> (String, usize) {
    struct Hashing(Sha256, usize);
    impl std::io::Write for Hashing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            self.1 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // The encoder writes a string in pieces between its escapes (a few bytes each in text
    // full of quotes); the hasher takes them in 64 KiB blocks.
    let mut h = std::io::BufWriter::with_capacity(64 << 10, Hashing(Sha256::new(), 0));
    let _ = serde_json::to_writer(&mut h, value);
    let _ = std::io::Write::flush(&mut h);
    let (h, _) = h.into_parts();
    (hex(&h.0.finalize()), h.1)
}

/// The audit digest of a tool call's arguments ([`json_sha256_hex`]), made while the call
/// goes out when the arguments are large: hashing 6 MB of escape-heavy text takes several
/// milliseconds, which the call no longer waits for. Such arguments are copied (the call
/// takes the original) and hashed on a blocking thread; small ones are hashed at once.
pub enum ArgsDigest {
    Done(String, usize),
    Pending(std::sync::mpsc::Receiver<(String, usize)>),
}

/// Arguments whose JSON is at least this long (estimated) are hashed beside the call.
const HASH_BESIDE_BYTES: usize = 256 << 10;

impl ArgsDigest {
    pub fn start(args: &serde_json::Value) -> Self {
        let beside = tokio::runtime::Handle::try_current()
            .ok()
            .filter(|_| at_least(args, HASH_BESIDE_BYTES));
        let Some(runtime) = beside else {
            let (hash, len) = json_sha256_hex(args);
            return Self::Done(hash, len);
        };
        let copy = args.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn_blocking(move || {
            let _ = tx.send(json_sha256_hex(&copy));
        });
        Self::Pending(rx)
    }

    /// The digest and length; waits for the hash when it is still being made (a call refused
    /// before it went out, or cancelled as it went, asks that early: at most the hash's few
    /// milliseconds).
    pub fn take(&mut self) -> (String, usize) {
        match std::mem::replace(self, Self::Done(String::new(), 0)) {
            Self::Done(hash, len) => (hash, len),
            Self::Pending(rx) => rx.recv().unwrap_or_default(),
        }
    }
}

/// Whether `value`'s JSON is at least `n` bytes long, by the lengths of its strings and a
/// few bytes for everything else; stops counting once it knows.
fn at_least(value: &serde_json::Value, n: usize) -> bool {
    use serde_json::Value;
    fn count(v: &Value, left: &mut usize) -> bool {
        let own = match v {
            Value::String(s) => s.len() + 2,
            Value::Array(a) => {
                *left = left.saturating_sub(a.len() + 1);
                return a.iter().any(|v| count(v, left));
            }
            Value::Object(m) => {
                for (k, v) in m {
                    *left = left.saturating_sub(k.len() + 4);
                    if count(v, left) {
                        return true;
                    }
                }
                return *left == 0;
            }
            _ => 4,
        };
        *left = left.saturating_sub(own);
        *left == 0
    }
    let mut left = n;
    count(value, &mut left) || left == 0
}

struct Sink {
    path: PathBuf,
    file: File,
    written: u64,
}

/// The audit sink. A tool call's line is formatted and queued in memory; queued lines are
/// written, in order and in one write, by the next run end or refusal
/// ([`AuditLog::record_now`], before the answer goes out), by any line once the queue is [`MAX_QUEUE_AGE`] old or
/// [`MAX_QUEUE_BYTES`] long, and at exit. So a tool call does not wait on the disk, and a
/// run's lines are all on disk when its answer is. A failing disk is logged, never fatal.
pub struct AuditLog {
    /// Every event is counted here, with or without a file (`/metrics`).
    pub metrics: super::metrics::Metrics,
    sink: Mutex<Option<Queued>>,
    path: Option<PathBuf>,
    log_arguments: bool,
    /// Takes the configured secrets out of every line (an upstream's error, arguments).
    redactor: std::sync::Arc<super::redact::Redactor>,
    /// Why the enabled log could not be opened (it then writes nothing): `/readyz`,
    /// `health` and `doctor` say so, so a deployment never loses its trail silently.
    open_error: Option<String>,
}

struct Queued {
    sink: Sink,
    max_bytes: u64,
    queue: String,
    since: Option<std::time::Instant>,
    /// The last write's failure, until a write succeeds again.
    last_error: Option<String>,
}

/// Queued lines are written at the latest with the next line after this long.
const MAX_QUEUE_AGE: std::time::Duration = std::time::Duration::from_millis(200);
/// Queued lines are written once they are this long.
const MAX_QUEUE_BYTES: usize = 64 * 1024;

/// One line of the file: the schema version and time, then the event's fields.
#[derive(Serialize)]
struct Line<'a> {
    v: u32,
    ts: String,
    #[serde(flatten)]
    event: &'a AuditEvent,
}

impl AuditLog {
    /// An audit log that writes nothing.
    pub fn disabled() -> Self {
        AuditLog {
            metrics: Default::default(),
            sink: Mutex::new(None),
            path: None,
            log_arguments: false,
            redactor: Default::default(),
            open_error: None,
        }
    }

    /// An enabled audit log that could not be opened: it writes nothing, and
    /// [`AuditLog::problem`] says why.
    pub fn unavailable(why: String) -> Self {
        let mut log = AuditLog::disabled();
        log.open_error = Some(why);
        log
    }

    /// Why audit lines are being lost, if they are: the log is enabled but could not be
    /// opened, or its last write failed. `None` when it writes, or is disabled on purpose.
    pub fn problem(&self) -> Option<String> {
        if let Some(e) = &self.open_error {
            return Some(e.clone());
        }
        self.sink
            .lock()
            .ok()
            .and_then(|g| g.as_ref().and_then(|q| q.last_error.clone()))
    }

    /// Opens (creating, 0600) the file the settings name.
    pub fn open(settings: &AuditSettings) -> Result<Self, AuditError> {
        if !settings.enabled {
            return Ok(AuditLog::disabled());
        }
        let path = settings
            .path
            .clone()
            .or_else(default_path)
            .ok_or(AuditError::NoPath)?;
        let sink = open_sink(&path)?;
        Ok(AuditLog {
            metrics: Default::default(),
            sink: Mutex::new(Some(Queued {
                sink,
                max_bytes: settings.max_bytes.max(4096),
                queue: String::new(),
                since: None,
                last_error: None,
            })),
            path: Some(path),
            log_arguments: settings.log_arguments,
            redactor: Default::default(),
            open_error: None,
        })
    }

    pub fn path(&self) -> Option<PathBuf> {
        self.path.clone()
    }

    pub fn log_arguments(&self) -> bool {
        self.log_arguments
    }

    /// Queues one line (see the type's docs for when it is written).
    pub fn record(&self, event: AuditEvent) {
        self.add(event, false);
    }

    /// The same log, taking these secrets out of every line.
    pub fn set_redactor(&mut self, redactor: std::sync::Arc<super::redact::Redactor>) {
        self.redactor = redactor;
    }

    /// Writes one line, and every queued line before it, now.
    pub fn record_now(&self, event: AuditEvent) {
        self.add(event, true);
    }

    /// Writes every queued line now.
    pub fn flush(&self) {
        if let Ok(mut guard) = self.sink.lock()
            && let Some(q) = guard.as_mut()
        {
            q.write_queue();
        }
    }

    fn add(&self, event: AuditEvent, now: bool) {
        self.metrics.observe(&event);
        if self.path.is_none() {
            return;
        }
        let line = Line {
            v: AUDIT_SCHEMA_VERSION,
            ts: rfc3339_now(),
            event: &event,
        };
        let line = match serde_json::to_string(&line) {
            Ok(line) => match self.redactor.json_message(line.as_bytes()) {
                Some(clean) => String::from_utf8_lossy(&clean).into_owned(),
                None => line,
            },
            Err(e) => {
                tracing::warn!("audit line not written: {e}");
                return;
            }
        };
        let Ok(mut guard) = self.sink.lock() else {
            return;
        };
        let Some(q) = guard.as_mut() else { return };
        q.queue.push_str(&line);
        q.queue.push('\n');
        let since = *q.since.get_or_insert_with(std::time::Instant::now);
        if now || q.queue.len() >= MAX_QUEUE_BYTES || since.elapsed() >= MAX_QUEUE_AGE {
            q.write_queue();
        }
    }
}

impl Queued {
    fn write_queue(&mut self) {
        if self.queue.is_empty() {
            return;
        }
        let queue = std::mem::take(&mut self.queue);
        self.since = None;
        let result = if self.sink.written + queue.len() as u64 <= self.max_bytes {
            write_line(&mut self.sink, self.max_bytes, &queue)
        } else {
            // Line by line, so the file rotates between lines.
            queue
                .split_inclusive('\n')
                .map(|line| write_line(&mut self.sink, self.max_bytes, line))
                .fold(Ok(()), Result::and)
        };
        self.last_error = result.err().map(|e| e.to_string());
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Writes one line (rotating first when it would pass `max_bytes`); a failure is logged
/// and returned, for [`AuditLog::problem`].
fn write_line(sink: &mut Sink, max_bytes: u64, line: &str) -> Result<(), AuditError> {
    if sink.written + line.len() as u64 > max_bytes
        && let Err(e) = rotate(sink)
    {
        tracing::warn!("audit log rotation failed: {e}");
    }
    match sink.file.write_all(line.as_bytes()) {
        Ok(()) => {
            sink.written += line.len() as u64;
            Ok(())
        }
        Err(error) => {
            let why = AuditError::Write {
                path: sink.path.clone(),
                error,
            };
            tracing::warn!("audit log write failed: {why}");
            Err(why)
        }
    }
}

fn open_sink(path: &Path) -> Result<Sink, AuditError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|error| AuditError::CreateDir {
            dir: dir.to_path_buf(),
            error,
        })?;
    }
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .map_err(|error| AuditError::Open {
            path: path.to_path_buf(),
            error,
        })?;
    let written = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(Sink {
        path: path.to_path_buf(),
        file,
        written,
    })
}

fn rotated(path: &Path, n: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

fn rotate(sink: &mut Sink) -> Result<(), AuditError> {
    for n in (1..KEEP_ROTATED).rev() {
        let from = rotated(&sink.path, n);
        if from.exists() {
            std::fs::rename(&from, rotated(&sink.path, n + 1)).map_err(AuditError::Rotate)?;
        }
    }
    std::fs::rename(&sink.path, rotated(&sink.path, 1)).map_err(AuditError::Rotate)?;
    *sink = open_sink(&sink.path)?;
    Ok(())
}

/// Now as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_now() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(d.as_secs() as i64, d.subsec_millis())
}

fn rfc3339(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `audit tail`: the last `n` lines of the file, one readable line each.
pub fn pretty(line: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return format!("(unreadable) {line}");
    };
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let exec: String = s("execution").chars().take(8).collect();
    match v.get("event").and_then(Value::as_str) {
        Some("run.start") => format!(
            "{} {exec} start  {} {} ({} bytes, sha256 {}…) allowed={}",
            s("ts"),
            s("client"),
            s("language"),
            v["codeBytes"],
            &s("codeSha256").chars().take(12).collect::<String>(),
            v["allowedTools"]
        ),
        Some("run.end") => format!(
            "{} {exec} end    {}{} in {} ms, {} tool calls",
            s("ts"),
            s("outcome"),
            v.get("error")
                .and_then(Value::as_str)
                .map(|e| format!(" ({e})"))
                .unwrap_or_default(),
            v["durationMs"],
            v["toolCalls"]
        ),
        Some("tool.call") => format!(
            "{} {exec} call   mcp__{}__{} {}{}{} {} ms",
            s("ts"),
            s("server"),
            s("tool"),
            s("decision"),
            v.get("reason")
                .and_then(Value::as_str)
                .map(|r| format!(": {r}"))
                .unwrap_or_default(),
            v.get("outcome")
                .and_then(Value::as_str)
                .map(|o| format!(" -> {o}"))
                .unwrap_or_default(),
            v["durationMs"]
        ),
        Some("run.refused") => format!("{} refused {}: {}", s("ts"), s("client"), s("reason")),
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_hash_as_their_compact_json_does() {
        let quoted = "she said \"hi\"\n\t é 🚀 \u{1} ".repeat(40_000);
        for v in [
            serde_json::json!({}),
            serde_json::json!({"a": 1, "b": [true, null, 2.5e-7], "c": {"d": "é"}}),
            serde_json::json!({"message": quoted}),
            serde_json::json!({"x": "y".repeat(64 << 10), "z": [quoted.clone(), quoted]}),
        ] {
            let bytes = serde_json::to_vec(&v).unwrap();
            assert_eq!(json_sha256_hex(&v), (sha256_hex(&bytes), bytes.len()));
        }
    }

    /// Large arguments are hashed beside the call, to the same digest; small ones at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_arguments_hash_beside_the_call_to_the_same_digest() {
        let big = "\"é\\".repeat(HASH_BESIDE_BYTES / 4);
        let cases = [
            (serde_json::json!({"a": "b"}), false),
            (serde_json::json!({"message": big}), true),
            (serde_json::json!({"m": [[{"k": big.clone()}], 1]}), true),
            (
                serde_json::json!({"n": vec![1_000_000; HASH_BESIDE_BYTES / 4]}),
                true,
            ),
        ];
        for (v, beside) in cases {
            let bytes = serde_json::to_vec(&v).unwrap();
            assert_eq!(at_least(&v, HASH_BESIDE_BYTES), beside);
            assert_eq!(bytes.len() >= HASH_BESIDE_BYTES, beside);
            let mut d = ArgsDigest::start(&v);
            assert_eq!(matches!(d, ArgsDigest::Pending(_)), beside);
            assert_eq!(d.take(), (sha256_hex(&bytes), bytes.len()));
        }
        // Outside a runtime there is no thread to hash on: at once.
        let v = serde_json::json!({"message": big});
        let d = std::thread::spawn(move || matches!(ArgsDigest::start(&v), ArgsDigest::Done(..)));
        assert!(d.join().unwrap());
    }

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_795_392_000, 999), "2026-11-23T00:00:00.999Z");
    }

    #[test]
    fn lines_are_versioned_json_and_the_file_rotates() {
        let dir = std::env::temp_dir().join(format!("cem-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("audit.jsonl");
        let log = AuditLog::open(&AuditSettings {
            path: Some(path.clone()),
            max_bytes: 4096,
            ..AuditSettings::default()
        })
        .unwrap();
        for i in 0..40 {
            log.record(AuditEvent::RunRefused {
                client: format!("c{i}"),
                reason: "x".repeat(100),
            });
        }
        log.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["v"], 1);
        assert_eq!(first["event"], "run.refused");
        assert!(rotated(&path, 1).exists());
        assert!(std::fs::metadata(&path).unwrap().len() <= 4096);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
