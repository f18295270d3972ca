//! The chart: a small self-contained SVG (no script, no external font or style), one panel
//! for the tokens through the model and one for the wall time, a pair of horizontal bars per
//! task (direct, code). Every bar has `class="bar direct"` or `class="bar code"` and a
//! `data-task`, so a test can count them.

use std::fmt::Write as _;

use super::scripted::Row;

const WIDTH: f64 = 760.0;
const LABEL: f64 = 190.0;
const BAR: f64 = 13.0;
const GAP: f64 = 9.0;
const RIGHT: f64 = 90.0;
const DIRECT_COLOR: &str = "#e07b39";
const CODE_COLOR: &str = "#2f6fb0";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A number as a short label: 12,345 -> "12.3k".
fn short(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v >= 10_000.0 {
        format!("{:.1}k{unit}", v / 1000.0)
    } else if v >= 100.0 || unit.is_empty() {
        format!("{v:.0}{unit}")
    } else {
        format!("{v:.1}{unit}")
    }
}

/// One panel of bar pairs at `y`; returns the y below it.
fn panel(
    svg: &mut String,
    y: f64,
    title: &str,
    rows: &[Row],
    value: impl Fn(&Row) -> (f64, f64),
    unit: &str,
) -> f64 {
    let _ = writeln!(
        svg,
        r#"<text x="12" y="{:.1}" font-size="14" font-weight="bold">{}</text>"#,
        y + 14.0,
        escape(title)
    );
    let mut y = y + 26.0;
    let max = rows
        .iter()
        .map(|r| {
            let (d, c) = value(r);
            d.max(c)
        })
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let span = WIDTH - LABEL - RIGHT;
    for r in rows {
        let (d, c) = value(r);
        let task = escape(&r.task);
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{task}</text>"#,
            LABEL - 8.0,
            y + BAR + 4.0
        );
        for (i, (side, v, color)) in [("direct", d, DIRECT_COLOR), ("code", c, CODE_COLOR)]
            .into_iter()
            .enumerate()
        {
            let by = y + i as f64 * BAR;
            let w = if v.is_finite() {
                (v / max * span).max(1.0)
            } else {
                0.0
            };
            let _ = writeln!(
                svg,
                r#"<rect class="bar {side}" data-task="{task}" data-value="{v}" x="{LABEL:.1}" y="{by:.1}" width="{w:.1}" height="{:.1}" fill="{color}"/>"#,
                BAR - 1.0
            );
            let _ = writeln!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#333">{}</text>"##,
                LABEL + w + 4.0,
                by + BAR - 3.0,
                escape(&short(v, unit))
            );
        }
        y += 2.0 * BAR + GAP;
    }
    y + 8.0
}

/// The chart of `rows`; `title` heads it.
pub(crate) fn svg(title: &str, subtitle: &str, rows: &[Row]) -> String {
    let per_panel = 26.0 + rows.len() as f64 * (2.0 * BAR + GAP) + 8.0;
    let height = 74.0 + 2.0 * per_panel + 10.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(s, "<title>{}</title>", escape(title));
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r#"<text x="12" y="22" font-size="16" font-weight="bold">{}</text>"#,
        escape(title)
    );
    let _ = writeln!(
        s,
        r##"<text x="12" y="40" font-size="11" fill="#555">{}</text>"##,
        escape(subtitle)
    );
    // Legend.
    let _ = writeln!(
        s,
        r#"<rect x="12" y="50" width="12" height="12" fill="{DIRECT_COLOR}"/><text x="30" y="60" font-size="12">direct (every tool loaded, each call through the model)</text>"#
    );
    let _ = writeln!(
        s,
        r#"<rect x="400" y="50" width="12" height="12" fill="{CODE_COLOR}"/><text x="418" y="60" font-size="12">code (our tools, one program)</text>"#
    );
    let y = panel(
        &mut s,
        74.0,
        "Tokens through the model's context (cl100k)",
        rows,
        |r| (r.direct.tokens.context as f64, r.code.tokens.context as f64),
        "",
    );
    panel(
        &mut s,
        y,
        "Wall time of the tool calls, median (ms; model time excluded)",
        rows,
        |r| (r.direct.ms, r.code.ms),
        " ms",
    );
    s.push_str("</svg>\n");
    s
}
