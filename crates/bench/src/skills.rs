//! The `skills` section of `code-executor-mcp bench`: a skill that calls the upstream `echo`
//! once, called three ways, next to the same code run directly and to the direct `echo`, in
//! the same rounds: a client's `{skill}` (no code), `skills.name()` from TypeScript code, and
//! `skills.name()` from Python code (a TypeScript skill from Python: across languages).
//!
//! A skill runs as an execution of its own, so a call from code costs a second worker; a
//! client's `{skill}` runs the skill alone, in one worker of its own language.

use std::path::Path;

use serde_json::{Value, json};

use super::measure::{Client, call, median, round, spawn_client_with, summarize, timed};

const CODE: &str = "return await tools.everything.echo({message: 'hello'})";

/// Runs the section against a server started from `exe` with `args` (its upstream config,
/// sandbox, pools), its skills kept under `dir`; `direct` is server-everything itself.
pub(super) async fn report(
    direct: &Client,
    exe: &str,
    args: &[String],
    dir: &Path,
    rounds: usize,
) -> anyhow::Result<Value> {
    let settings = dir.join("skills-settings.json");
    std::fs::write(
        &settings,
        serde_json::to_vec(&json!({"skills": {"dir": dir.join("skills")}}))?,
    )?;
    let (ours, _) = spawn_client_with(
        exe,
        args,
        &[("CODE_EXECUTOR_CONFIG_PATH", settings.as_path())],
    )
    .await?;
    let run = |tool: &'static str, args: Value| {
        let ours = &ours;
        async move {
            let r = call(ours, tool, args).await?;
            anyhow::ensure!(
                r.is_error != Some(true),
                "{tool}: {:?}",
                r.structured_content
            );
            Ok(())
        }
    };
    run(
        "execute_typescript",
        json!({"code": CODE, "save": {"name": "bench-echo", "description": "Echoes hello."}}),
    )
    .await?;
    let echo = || async {
        call(direct, "echo", json!({"message": "hello"})).await?;
        Ok(())
    };
    let code = || run("execute_typescript", json!({"code": CODE}));
    let client_skill = || run("execute_typescript", json!({"skill": "bench-echo"}));
    let from_ts = || {
        run(
            "execute_typescript",
            json!({"code": "return await skills.bench_echo()"}),
        )
    };
    let from_py = || run("execute_python", json!({"code": "skills.bench_echo()"}));
    for _ in 0..3 {
        code().await?;
        client_skill().await?;
        from_ts().await?;
        from_py().await?;
    }
    let mut m: [Vec<f64>; 5] = Default::default();
    let mut ratios: [Vec<f64>; 3] = Default::default();
    for _ in 0..rounds {
        let e = timed(echo()).await?;
        let c = timed(code()).await?;
        let s = timed(client_skill()).await?;
        let t = timed(from_ts()).await?;
        let p = timed(from_py()).await?;
        for (slot, v) in m.iter_mut().zip([e, c, s, t, p]) {
            slot.push(v);
        }
        for (slot, v) in ratios.iter_mut().zip([s / c, t / c, p / c]) {
            slot.push(v);
        }
    }
    let [echo_ms, code_ms, skill_ms, ts_ms, py_ms] = m.map(summarize);
    let [r_skill, r_ts, r_py] = ratios.map(summarize);
    drop(ours);
    Ok(json!({
        "direct_echo_ms": echo_ms,
        "same_code_directly_ms": code_ms,
        "client_skill_ms": skill_ms,
        "from_typescript_ms": ts_ms,
        "from_python_ms": py_ms,
        "per_round_vs_same_code": {"client_skill": r_skill, "from_typescript": r_ts, "from_python": r_py},
        "ratios": {
            "client_skill_vs_same_code": round(median(&r_skill)),
            "from_typescript_vs_same_code": round(median(&r_ts)),
            "from_python_vs_same_code": round(median(&r_py)),
            "same_code_vs_direct_echo": round(median(&code_ms) / median(&echo_ms)),
        },
        "note": "the skill calls echo once; a skill runs as an execution of its own (a second worker)",
    }))
}
