//! `code-executor-mcp approvals`: list, approve, deny and watch the calls waiting in the
//! approvals inbox of the servers running as this user (`runtime::host::inbox`). Each server
//! whose inbox has started keeps one file, `<pid>.json` (mode 0600), in
//! `$XDG_RUNTIME_DIR/code-executor-mcp/approvals/` (else the state directory's
//! `approvals/`), holding its page's loopback URL and token; files of servers that are gone
//! are skipped and removed.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Context;

use crate::console::{Hinted, say};
use crate::runtime::host::inbox::{LinkFile, Pending, TOKEN_HEADER, VIA_HEADER, link_dir};

/// How often `watch` looks again.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The running servers' inbox files.
fn servers() -> anyhow::Result<Vec<LinkFile>> {
    let Some(dir) = link_dir() else {
        return Err(Hinted::new(
            "no runtime or state directory to find servers in",
            "set XDG_RUNTIME_DIR or HOME",
        )
        .into());
    };
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(found);
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(link) = serde_json::from_str::<LinkFile>(&text) else {
            continue;
        };
        if std::path::Path::new(&format!("/proc/{}", link.pid)).exists() {
            found.push(link);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    found.sort_by_key(|l| l.pid);
    Ok(found)
}

fn client() -> anyhow::Result<reqwest::Client> {
    crate::tls::install_tls_provider();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .context("building the HTTP client")
}

async fn pending_of(http: &reqwest::Client, s: &LinkFile) -> anyhow::Result<Vec<Pending>> {
    let r = http
        .get(format!("{}.json", s.url))
        .header(TOKEN_HEADER, &s.token)
        .send()
        .await
        .with_context(|| format!("asking the server (pid {}) at {}", s.pid, s.url))?
        .error_for_status()?;
    Ok(r.json().await?)
}

fn line(s: &LinkFile, p: &Pending) -> String {
    let args: String = p.arguments.split_whitespace().collect::<Vec<_>>().join(" ");
    format!(
        "{id}\t{server}/{tool}\tasked by {principal} (pid {pid}, execution {exe})\t{args}",
        id = p.id,
        server = p.server,
        tool = p.tool,
        principal = p.principal,
        pid = s.pid,
        exe = p.execution,
    )
}

/// Prints the waiting approvals of every running server.
pub async fn list() -> anyhow::Result<()> {
    let http = client()?;
    let mut any = false;
    for s in servers()? {
        for p in pending_of(&http, &s).await? {
            any = true;
            say(&line(&s, &p));
        }
    }
    if !any {
        say("no approvals are waiting");
    }
    Ok(())
}

/// Approves or denies approval `id` (`N`, or `PID:N` when several servers run).
pub async fn answer(id: &str, approve: bool) -> anyhow::Result<()> {
    let (pid, n) = match id.split_once(':') {
        Some((pid, n)) => (Some(pid.parse::<u32>().ok()), n),
        None => (None, id),
    };
    let (Ok(n), Some(pid)) = (n.parse::<u64>(), pid.map_or(Some(None), |p| p.map(Some))) else {
        return Err(Hinted::new(
            format!("`{id}` is not an approval id"),
            "use the number `code-executor-mcp approvals list` shows (or PID:N)",
        )
        .into());
    };
    let http = client()?;
    let what = if approve { "approve" } else { "deny" };
    for s in servers()? {
        if pid.is_some_and(|p| p != s.pid) {
            continue;
        }
        let r = http
            .post(format!("{}/{n}/{what}", s.url))
            .header(TOKEN_HEADER, &s.token)
            .header(VIA_HEADER, "terminal")
            .send()
            .await
            .with_context(|| format!("asking the server (pid {}) at {}", s.pid, s.url))?;
        if r.status().is_success() {
            say(&format!(
                "{}d approval {n} (pid {})",
                if approve { "approve" } else { "denie" },
                s.pid
            ));
            return Ok(());
        }
    }
    Err(Hinted::new(
        format!("no approval {id} is waiting"),
        "`code-executor-mcp approvals list` shows the waiting ones (an approval that timed out or was answered is gone)",
    )
    .into())
}

/// Prints each approval as it arrives, until interrupted.
pub async fn watch() -> anyhow::Result<()> {
    let http = client()?;
    let mut seen = BTreeSet::new();
    say("watching for approvals (Ctrl-C to stop)");
    loop {
        for s in servers()? {
            for p in pending_of(&http, &s).await.unwrap_or_default() {
                if seen.insert((s.pid, p.id)) {
                    say(&line(&s, &p));
                }
            }
        }
        tokio::time::sleep(WATCH_EVERY).await;
    }
}
