//! `code-executor-mcp approvals`: list, approve, deny and watch the calls waiting in the
//! approvals inbox of the servers running as this user (`runtime::host::inbox`). Each server
//! whose inbox has started keeps one file, `<pid>.json` (mode 0600), in
//! `$XDG_RUNTIME_DIR/code-executor-mcp/approvals/` (else the state directory's
//! `approvals/`), holding its page's loopback URL and token; files of servers that are gone
//! are skipped and removed.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Context;

use runtime::host::inbox::{
    LinkFile, Pending, TOKEN_HEADER, VIA_HEADER, link_dir, link_file_trusted,
};
use tools::console::{Hinted, say};

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
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        // Only files we wrote, mode 0600 (not a link, not another user's).
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| link_file_trusted(&m)) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(link) = serde_json::from_str::<LinkFile>(&text) else {
            continue;
        };
        if sandbox::process::exists(link.pid) {
            found.push(link);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    found.sort_by_key(|l| l.pid);
    Ok(found)
}

fn client() -> anyhow::Result<reqwest::Client> {
    tools::tls::install_tls_provider();
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

/// `text` safe for a terminal: control characters (escape sequences a tool name, a client's
/// declared name or an argument could carry) shown as `\u{..}`.
fn plain(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// One approval for the terminal: a line, then the code around the call, indented.
fn line(s: &LinkFile, p: &Pending) -> String {
    let args: String = p.arguments.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = format!(
        "{id}\t{server}/{tool}\tasked by {principal} (pid {pid}, execution {exe})\t{args}",
        id = p.id,
        server = plain(&p.server),
        tool = plain(&p.tool),
        principal = plain(&p.principal),
        pid = s.pid,
        exe = plain(&p.execution),
        args = plain(&args),
    );
    for code in p.code.lines() {
        out.push_str("\n    ");
        out.push_str(&plain(code));
    }
    out
}

/// Prints the waiting approvals of every running server (a server that does not answer is
/// named on stderr and skipped).
pub async fn list() -> anyhow::Result<()> {
    let http = client()?;
    let mut any = false;
    for s in servers()? {
        match pending_of(&http, &s).await {
            Ok(all) => {
                for p in all {
                    any = true;
                    say(&line(&s, &p));
                }
            }
            Err(e) => tools::console::tell(&format!(
                "warning: the server with pid {} did not answer: {e:#}",
                s.pid
            )),
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
    let mut servers = servers()?;
    servers.retain(|s| pid.is_none_or(|p| p == s.pid));
    if pid.is_none() && servers.len() > 1 {
        // The same number may wait in two servers: a bare N must name one approval.
        let mut holding = vec![];
        for s in &servers {
            if pending_of(&http, s)
                .await
                .is_ok_and(|all| all.iter().any(|p| p.id == n))
            {
                holding.push(s.pid);
            }
        }
        if holding.len() > 1 {
            return Err(Hinted::new(
                format!("approval {n} waits in several servers (pids {holding:?})"),
                format!("name one as PID:{n}, e.g. {}:{n}", holding[0]),
            )
            .into());
        }
        servers.retain(|s| holding.contains(&s.pid));
    }
    for s in servers {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_terminal_prints_carries_no_escape_sequences() {
        let s = LinkFile {
            pid: 7,
            url: String::new(),
            token: String::new(),
        };
        let p = Pending {
            id: 1,
            principal: "evil\u{1b}]0;owned\u{7}".into(),
            execution: "e".into(),
            server: "s\u{1b}[2J".into(),
            tool: "t\r".into(),
            rule: String::new(),
            arguments: "{\"a\": \"\u{1b}[31mred\"}".into(),
            code: ">   1 | tools.s.t('\u{1b}[1A')\n".into(),
            asked_at: 0,
        };
        let shown = line(&s, &p);
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{shown:?}"
        );
        assert!(
            shown.contains("\\u{1b}]0;owned") && shown.contains("\n    >   1 | tools.s.t("),
            "{shown}"
        );
    }
}
