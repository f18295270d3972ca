//! The `large_results` section of `bench`: a 5 MB upstream result returned whole from code,
//! next to the same call made directly, in the same run; and the `tokens` line.
//!
//! The upstream is server-everything's `echo`: its message is a 5 MB JSON document (nested
//! records with non-ASCII text, quotes and escapes), built the same way by the bench, by
//! TypeScript and by Python from one chunk, so that every hop has real escaping to do. The
//! direct call sends the message and receives `Echo: <message>`; an execution builds the
//! message in the sandbox, calls `echo` with it and returns the answer whole, so the same
//! 5 MB travel as arguments (code -> host -> upstream) and as a result (upstream -> host ->
//! code -> host -> client). Every answer is checked byte for byte, so a fast wrong answer
//! cannot pass. Rounds alternate direct, TypeScript and Python; ratios are per round.
//!
//! With a second server of ours whose `pii` detectors scan every tool (all built-in
//! detectors on, code sees tokens), each round also runs both languages there: the
//! `pii` ratios are the detectors' cost on the 5 MB result, against the same execution
//! without them in the same round (target: under 1.2). The document holds no personal
//! data, so the answers are still checked byte for byte: what is measured is the scan
//! every result of a scanned tool pays.

use serde_json::{Value, json};

use super::measure::{Client, call, round, summarize, timed};

/// The size of the upstream result.
const TARGET_BYTES: usize = 5 * 1024 * 1024;

/// One record of the document; the message repeats it (with its index-free text, the three
/// languages build byte-equal documents with a join).
fn chunk() -> String {
    let record = json!({
        "id": "rec-0001",
        "name": "Zoë Åström — 名前 🚀",
        "quote": "she said \"hi\"\\n and left\ttab",
        "tags": ["alpha", "βeta", "γάμμα", "dëlta"],
        "nested": {"a": {"b": {"c": [1, 2.5, -3e-7, true, false, null, {"d": "é"}]}}},
        "text": "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua."
    });
    record.to_string()
}

/// How many chunks make the document about [`TARGET_BYTES`] long.
fn copies(chunk: &str) -> usize {
    TARGET_BYTES / (chunk.len() + 1)
}

fn document(chunk: &str, n: usize) -> String {
    let mut s = String::with_capacity((chunk.len() + 1) * n + 2);
    s.push('[');
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(chunk);
    }
    s.push(']');
    s
}

/// Median, p90, p99 and max of samples in milliseconds.
fn percentiles(mut ms: Vec<f64>) -> Value {
    let mut v = summarize(ms.clone());
    if ms.is_empty() {
        return v;
    }
    ms.sort_by(f64::total_cmp);
    let pick = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    v["p90"] = json!(round(pick(0.9)));
    v["p99"] = json!(round(pick(0.99)));
    v
}

/// The text of an answer's `result` (an execution) or of its one text block (direct).
fn answered_text(r: &rmcp::model::CallToolResult, execution: bool) -> Option<String> {
    if execution {
        let s = r.structured_content.as_ref()?;
        s["result"].as_str().map(str::to_string)
    } else {
        r.content.first()?.as_text().map(|t| t.text.clone())
    }
}

/// The settings of the server with detectors on (`pii`), for [`report`]'s `ours_pii`.
pub(super) fn pii_settings() -> Value {
    json!({"pii": {"scan": ["*"]}})
}

/// A server of ours started like `args` with [`pii_settings`] (its settings file in `dir`).
pub(super) async fn pii_server(
    exe: &str,
    args: &[String],
    dir: &std::path::Path,
) -> anyhow::Result<(Client, Option<u32>)> {
    let path = dir.join("pii-settings.json");
    std::fs::write(&path, serde_json::to_vec(&pii_settings())?)?;
    let (client, pid) = super::measure::spawn_client_with(
        exe,
        args,
        &[(tools::config::settings::SETTINGS_PATH_ENV, &path)],
    )
    .await?;
    client.peer().list_all_tools().await?;
    Ok((client, pid))
}

/// `large_results`: direct `echo` of the document vs the same from TypeScript and Python,
/// and, with `ours_pii`, from both with the detectors on.
pub(super) async fn report(
    direct: &Client,
    ours: &Client,
    ours_pii: Option<&Client>,
    rounds: usize,
) -> anyhow::Result<Value> {
    let chunk = chunk();
    let n = copies(&chunk);
    let doc = document(&chunk, n);
    let want = format!("Echo: {doc}");
    let literal = serde_json::to_string(&chunk)?;
    let ts = format!(
        "const chunk = {literal};\n\
         const message = '[' + new Array({n}).fill(chunk).join(',') + ']';\n\
         return await tools.everything.echo({{ message }});"
    );
    let py = format!(
        "chunk = {literal}\n\
         message = '[' + ','.join([chunk] * {n}) + ']'\n\
         call_mcp_tool('everything', 'echo', {{'message': message}})"
    );
    let runs = [
        ("direct", None, ours),
        ("typescript", Some(("execute_typescript", ts.clone())), ours),
        ("python", Some(("execute_python", py.clone())), ours),
        (
            "typescript_pii",
            Some(("execute_typescript", ts)),
            ours_pii.unwrap_or(ours),
        ),
        (
            "python_pii",
            Some(("execute_python", py)),
            ours_pii.unwrap_or(ours),
        ),
    ];
    let runs = &runs[..if ours_pii.is_some() { 5 } else { 3 }];
    let mut times: [Vec<f64>; 5] = Default::default();
    let mut ratios: [Vec<f64>; 4] = Default::default();
    // One untimed round first: upstream and pools warm, the check done once up front.
    for warm in [true, false] {
        for _ in 0..if warm { 1 } else { rounds } {
            let mut m = [0.0; 5];
            for (i, (label, exec, server)) in runs.iter().enumerate() {
                let mut got = None;
                let ms = timed(async {
                    let r = match exec {
                        None => call(direct, "echo", json!({"message": doc})).await?,
                        Some((tool, code)) => call(server, tool, json!({"code": code})).await?,
                    };
                    got = Some(r);
                    Ok(())
                })
                .await?;
                let text = got
                    .as_ref()
                    .and_then(|r| answered_text(r, exec.is_some()))
                    .unwrap_or_default();
                anyhow::ensure!(
                    text == want,
                    "large_results: the {label} answer differs from the message sent ({} bytes, want {})",
                    text.len(),
                    want.len()
                );
                m[i] = ms;
            }
            if !warm {
                for (all, v) in times.iter_mut().zip(m) {
                    all.push(v);
                }
                ratios[0].push(m[1] / m[0]);
                ratios[1].push(m[2] / m[0]);
                if ours_pii.is_some() {
                    ratios[2].push(m[3] / m[1]);
                    ratios[3].push(m[4] / m[2]);
                }
            }
        }
    }
    let [d, t, p, tp, pp] = times.map(percentiles);
    let [rt, rp, rtp, rpp] = ratios.map(percentiles);
    let pii = ours_pii.map(|_| {
        json!({
            "settings": pii_settings(),
            "typescript_ms": tp,
            "python_ms": pp,
            "typescript_pii_vs_without_per_round": rtp,
            "python_pii_vs_without_per_round": rpp,
            "ratios": {
                "typescript_pii_vs_without": rtp["median"],
                "python_pii_vs_without": rpp["median"],
            },
            "target": "< 1.2",
        })
    });
    Ok(json!({
        "pii": pii,
        "result_bytes": want.len(),
        "rounds": rounds,
        "direct_echo_ms": d,
        "typescript_ms": t,
        "python_ms": p,
        "typescript_vs_direct_per_round": rt,
        "python_vs_direct_per_round": rp,
        "ratios": {
            "typescript_vs_direct": rt["median"],
            "python_vs_direct": rp["median"],
        },
        "target": "<= 1.5",
    }))
}

/// `tokens`: our `tools/list` in cl100k tokens, as an agent receives it (compact JSON).
/// With pinned direct tools (`directTools`), `own_cl100k` is our own tools' part (what the
/// target is about) and `tools_list_cl100k` the whole list.
pub(super) async fn tokens(ours: &Client) -> anyhow::Result<Value> {
    let tools = ours.peer().list_all_tools().await?;
    let text = serde_json::to_string(&tools)?;
    let names: Vec<_> = faces::server::tool_definitions()
        .into_iter()
        .map(|t| t.name)
        .collect();
    let own: Vec<_> = tools.iter().filter(|t| names.contains(&t.name)).collect();
    Ok(json!({
        "tools_list_cl100k": faces::tokens::count_tokens(&text)?,
        "own_cl100k": faces::tokens::count_tokens(&serde_json::to_string(&own)?)?,
        "tools": tools.len(),
        "direct_tools": tools.len() - own.len(),
        "bytes": text.len(),
        "target": "< 500 (own)",
    }))
}
