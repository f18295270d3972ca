//! The `check` section of `code-executor-mcp bench`: what `check: true` adds to a 50-line
//! script that calls the upstream `echo` once, in each language, with the checker warm (its
//! declarations written, its caches filled), next to the same script unchecked and the direct
//! `echo`, in the same rounds.
//!
//! The checkers are the ones the server finds (PATH), or those `--check-typescript` and
//! `--check-python` name; a language without one reports why instead of numbers.

use std::path::Path;

use serde_json::{Value, json};

use super::measure::{Client, call, median, round, spawn_client_with, summarize, timed};

/// A TypeScript script of 50 lines: one upstream call and typed work on its result.
pub(super) fn script_ts() -> String {
    let mut lines = vec![
        "const echoed = await tools.everything.echo({message: 'hello world'});".to_string(),
        "interface Row { id: number; name: string; score: number }".to_string(),
        "const words: string[] = echoed.split(' ');".to_string(),
        "const rows: Row[] = words.map((w, i) => ({id: i, name: w, score: w.length * 3}));"
            .to_string(),
    ];
    let mut i = 0;
    while lines.len() < 49 {
        lines.push(format!(
            "const v{i}: number = rows.reduce((a, r) => a + r.score * {}, {i}) % 97;",
            i + 1
        ));
        i += 1;
    }
    lines.push(format!("return {{rows: rows.length, last: v{}}};", i - 1));
    lines.join("\n")
}

/// The same in Python.
pub(super) fn script_py() -> String {
    let mut lines = vec![
        "from typing import TypedDict".to_string(),
        "class Row(TypedDict):\n    id: int\n    name: str\n    score: int".to_string(),
        "echoed = tools.everything.echo(message='hello world')".to_string(),
        "words: list[str] = echoed.split(' ')".to_string(),
        "rows: list[Row] = [{'id': i, 'name': w, 'score': len(w) * 3} for i, w in enumerate(words)]"
            .to_string(),
    ];
    let mut i = 0;
    // The class is four lines.
    while lines.len() + 3 < 49 {
        lines.push(format!(
            "v{i}: int = sum(r['score'] * {} for r in rows) % 97 + {i}",
            i + 1
        ));
        i += 1;
    }
    lines.push(format!("{{'rows': len(rows), 'last': v{}}}", i - 1));
    lines.join("\n")
}

/// Runs the section against a server started from `exe` with `args`; `direct` is
/// server-everything itself; `ts` and `py` name the checkers (else the server's PATH).
pub(super) async fn report(
    direct: &Client,
    exe: &str,
    args: &[String],
    dir: &Path,
    rounds: usize,
    ts: Option<&str>,
    py: Option<&str>,
) -> anyhow::Result<Value> {
    let settings = dir.join("check-settings.json");
    let mut check = json!({});
    if let Some(t) = ts {
        check["typescript"] = json!(t);
    }
    if let Some(p) = py {
        check["python"] = json!(p);
    }
    std::fs::write(&settings, serde_json::to_vec(&json!({ "check": check }))?)?;
    let (ours, _) = spawn_client_with(
        exe,
        args,
        &[("CODE_EXECUTOR_CONFIG_PATH", settings.as_path())],
    )
    .await?;
    let mut out = json!({"script_lines": 50});
    for (language, tool, code) in [
        ("typescript", "execute_typescript", script_ts()),
        ("python", "execute_python", script_py()),
    ] {
        let run = |checked: bool| {
            let (ours, code) = (&ours, &code);
            async move {
                let r = call(ours, tool, json!({"code": code, "check": checked})).await?;
                anyhow::ensure!(
                    r.is_error != Some(true),
                    "{language} (check: {checked}): {:?}",
                    r.structured_content
                );
                Ok(())
            }
        };
        // Warm: the learned type of echo, the declarations written, the checker's caches.
        let mut warm = Ok(());
        for _ in 0..3 {
            run(false).await?;
            warm = run(true).await;
        }
        if let Err(e) = warm {
            out[language] = json!({"skipped": e.to_string()});
            continue;
        }
        let (mut echo, mut plain, mut checked, mut added) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let e = timed(async {
                call(direct, "echo", json!({"message": "hello world"})).await?;
                Ok(())
            })
            .await?;
            let p = timed(run(false)).await?;
            let c = timed(run(true)).await?;
            echo.push(e);
            plain.push(p);
            checked.push(c);
            added.push(c - p);
        }
        let (echo, plain, checked, added) = (
            summarize(echo),
            summarize(plain),
            summarize(checked),
            summarize(added),
        );
        out[language] = json!({
            "direct_echo_ms": echo,
            "unchecked_ms": plain,
            "checked_ms": checked,
            "added_per_round_ms": added,
            "ratios": {
                "checked_vs_unchecked": round(median(&checked) / median(&plain)),
                "checked_vs_direct_echo": round(median(&checked) / median(&echo)),
                "unchecked_vs_direct_echo": round(median(&plain) / median(&echo)),
            },
        });
    }
    drop(ours);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_scripts_are_fifty_lines() {
        assert_eq!(super::script_ts().lines().count(), 50);
        assert_eq!(super::script_py().lines().count(), 50);
    }
}
