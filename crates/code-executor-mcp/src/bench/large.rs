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

/// `large_results`: direct `echo` of the document vs the same from TypeScript and Python.
pub(super) async fn report(direct: &Client, ours: &Client, rounds: usize) -> anyhow::Result<Value> {
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
        ("direct", None),
        ("typescript", Some(("execute_typescript", ts))),
        ("python", Some(("execute_python", py))),
    ];
    let mut times: [Vec<f64>; 3] = Default::default();
    let mut ratios: [Vec<f64>; 2] = Default::default();
    // One untimed round first: upstream and pools warm, the check done once up front.
    for warm in [true, false] {
        for _ in 0..if warm { 1 } else { rounds } {
            let mut m = [0.0; 3];
            for (i, (label, exec)) in runs.iter().enumerate() {
                let mut got = None;
                let ms = timed(async {
                    let r = match exec {
                        None => call(direct, "echo", json!({"message": doc})).await?,
                        Some((tool, code)) => call(ours, tool, json!({"code": code})).await?,
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
            }
        }
    }
    let [d, t, p] = times.map(percentiles);
    let [rt, rp] = ratios.map(percentiles);
    Ok(json!({
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
pub(super) async fn tokens(ours: &Client) -> anyhow::Result<Value> {
    let tools = ours.peer().list_all_tools().await?;
    let text = serde_json::to_string(&tools)?;
    Ok(json!({
        "tools_list_cl100k": crate::demo::count_tokens(&text)?,
        "tools": tools.len(),
        "bytes": text.len(),
        "target": "< 500",
    }))
}
