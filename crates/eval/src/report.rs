//! The report: a table for people, the same as JSON, and the chart's titles.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::context::ContextCost;
use super::model::ModelRow;
use super::scripted::{Row, Side};
use super::tasks::TaskFile;

/// Everything `eval` found.
pub(crate) struct Report<'a> {
    pub file: &'a TaskFile,
    pub runs: usize,
    pub warmup: usize,
    pub cost: &'a ContextCost,
    pub rows: &'a [Row],
    pub model: Option<&'a [ModelRow]>,
}

/// A ratio for the table: `0.42x`, or `-` when undefined.
fn x(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.2}x")
    } else {
        "-".into()
    }
}

fn ok(side: &Side) -> &'static str {
    if side.ok { "ok" } else { "FAIL" }
}

impl Report<'_> {
    pub(crate) fn chart_title(&self) -> String {
        format!("code-executor-mcp eval: {}", self.file.name)
    }

    pub(crate) fn chart_subtitle(&self) -> String {
        format!(
            "{} tools directly ({} tokens) against ours ({} tokens); medians of {} runs",
            self.cost.direct_tools, self.cost.direct_tokens, self.cost.ours.tokens, self.runs
        )
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "version": 1,
            "tokenizer": "cl100k_base",
            "taskFile": self.file.name,
            "description": self.file.description,
            "runs": self.runs,
            "warmup": self.warmup,
            "context": self.cost,
            "tasks": self.rows,
            "model": self.model,
        })
    }

    pub(crate) fn table(&self) -> String {
        let mut s = String::new();
        let c = self.cost;
        let _ = writeln!(
            s,
            "eval: {} ({} tasks, medians of {} runs after {} warm-up)",
            self.file.name,
            self.rows.len(),
            self.runs,
            self.warmup
        );
        let _ = writeln!(s, "\ncontext cost of the tool definitions (cl100k tokens)");
        let _ = writeln!(s, "  {:<28} {:>6} {:>8}", "server", "tools", "tokens");
        for sv in &c.servers {
            match &sv.error {
                None => {
                    let _ = writeln!(s, "  {:<28} {:>6} {:>8}", sv.server, sv.tools, sv.tokens);
                }
                Some(e) => {
                    let _ = writeln!(
                        s,
                        "  {:<28} {:>6} {:>8}  not listed: {e}",
                        sv.server, "-", "-"
                    );
                }
            }
        }
        let _ = writeln!(
            s,
            "  {:<28} {:>6} {:>8}",
            "all, loaded directly", c.direct_tools, c.direct_tokens
        );
        let pinned = if c.ours.pinned_tools > 0 {
            format!(
                "  (own {} + {} pinned directTools {})",
                c.ours.own_tokens, c.ours.pinned_tools, c.ours.pinned_tokens
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  {:<28} {:>6} {:>8}  {}{pinned}",
            "through code-executor-mcp",
            c.ours.tools,
            c.ours.tokens,
            x(c.ratio)
        );
        let _ = writeln!(
            s,
            "\nscripted tasks: tokens through the model's context, model turns, wall time of the \
             tool calls (model time excluded); ratio = code / direct"
        );
        let _ = writeln!(
            s,
            "  {:<24} {:>8} {:>8} {:>6}  {:>9} {:>9} {:>6}  {:>5} {:>5}  {:>9} {:>9} {:>6}  ok dir/code",
            "task",
            "ctx dir",
            "ctx code",
            "ratio",
            "input dir",
            "input code",
            "ratio",
            "turns",
            "",
            "ms dir",
            "ms code",
            "ratio",
        );
        for r in self.rows {
            let _ = writeln!(
                s,
                "  {:<24} {:>8} {:>8} {:>6}  {:>9} {:>9} {:>6}  {:>5} {:>5}  {:>9.1} {:>9.1} {:>6}  {}/{}",
                r.task,
                r.direct.tokens.context,
                r.code.tokens.context,
                x(r.ratios.tokens),
                r.direct.tokens.input,
                r.code.tokens.input,
                x(r.ratios.input),
                r.direct.turns,
                r.code.turns,
                r.direct.ms,
                r.code.ms,
                x(r.ratios.time),
                ok(&r.direct),
                ok(&r.code),
            );
        }
        for r in self.rows {
            for (way, side) in [("direct", &r.direct), ("code", &r.code)] {
                if let Some(e) = &side.error {
                    let _ = writeln!(s, "  {} ({way}): {e}", r.task);
                }
                if side.ok && !side.tokens_stable {
                    let _ = writeln!(
                        s,
                        "  {} ({way}): token counts differed between runs (the results change); the first run is shown",
                        r.task
                    );
                }
            }
        }
        if let Some(rows) = self.model {
            let _ = writeln!(
                s,
                "\nmodel-driven tasks: success, tokens as the provider reported them (input/output), turns, wall time (model included)"
            );
            let _ = writeln!(
                s,
                "  {:<24} {:>4} {:>15} {:>5} {:>9}   {:>4} {:>15} {:>5} {:>9}",
                "task",
                "dir",
                "tokens in/out",
                "turns",
                "ms",
                "code",
                "tokens in/out",
                "turns",
                "ms"
            );
            for r in rows {
                let side = |m: &super::model::ModelSide| {
                    (
                        if m.ok { "ok" } else { "FAIL" },
                        format!("{}/{}", m.input_tokens, m.output_tokens),
                        m.turns,
                        m.ms,
                    )
                };
                let (d, c) = (side(&r.direct), side(&r.code));
                let _ = writeln!(
                    s,
                    "  {:<24} {:>4} {:>15} {:>5} {:>9.1}   {:>4} {:>15} {:>5} {:>9.1}",
                    r.task, d.0, d.1, d.2, d.3, c.0, c.1, c.2, c.3
                );
            }
            for r in rows {
                for (way, side) in [("direct", &r.direct), ("code", &r.code)] {
                    if let Some(e) = &side.error {
                        let _ = writeln!(s, "  {} ({way}): {e}", r.task);
                    }
                }
            }
        }
        s
    }
}
