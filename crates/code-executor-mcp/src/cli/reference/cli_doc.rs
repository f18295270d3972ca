//! `docs/cli.md`: every visible command of the clap tree, with its description, and every
//! argument with its help, default, environment variable and possible values. Hidden
//! commands and arguments stay out.

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command};

/// The document for `root`, the binary's command (not yet built: clap's own `help` command
/// and `--help`/`--version` flags are added at build and are not listed).
pub(super) fn render(root: &Command) -> String {
    let bin = root.get_name();
    let mut out = String::new();
    let _ = writeln!(out, "# Command line reference\n");
    let _ = writeln!(
        out,
        "Generated from the command definitions (`crates/code-executor-mcp/src/cli.rs` and the \
         argument types it names) by `{}`; do not edit it by hand. `{bin} help COMMAND` and \
         `{bin} COMMAND --help` print the same at a terminal.\n",
        super::shared::REGENERATE
    );
    let _ = writeln!(out, "{}\n", long_about(root));
    let _ = writeln!(out, "## Commands\n");
    let _ = writeln!(out, "| command | what it does |\n| --- | --- |");
    let mut all = Vec::new();
    collect(root, &mut Vec::new(), &mut all);
    for (path, cmd) in &all {
        let _ = writeln!(
            out,
            "| [`{}`](#{}) | {} |",
            path.join(" "),
            anchor(&path.join(" ")),
            cell(&about(cmd))
        );
    }
    let globals: Vec<&Arg> = root
        .get_arguments()
        .filter(|a| a.is_global_set() && !a.is_hide_set())
        .collect();
    let _ = writeln!(out, "\n## Options for every command\n");
    arguments(&mut out, &globals);
    if let Some(after) = root.get_after_long_help().or(root.get_after_help()) {
        let _ = writeln!(out, "\n{}", after.to_string().trim_end());
    }
    for (path, cmd) in &all {
        let _ = writeln!(out, "\n## {}\n", path.join(" "));
        let _ = writeln!(out, "{}\n", long_about(cmd));
        let _ = writeln!(out, "Usage: `{}`", usage(path, cmd));
        let own: Vec<&Arg> = cmd
            .get_arguments()
            .filter(|a| !a.is_global_set() && !a.is_hide_set())
            .collect();
        if !own.is_empty() {
            let _ = writeln!(out);
            arguments(&mut out, &own);
        }
        if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
            let _ = writeln!(out, "\n{}", after.to_string().trim_end());
        }
    }
    out
}

/// Every visible command under `cmd`, depth first, with its path from the binary's name.
/// A command with subcommands is listed too when it runs without one (`approvals`).
fn collect<'a>(
    cmd: &'a Command,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, &'a Command)>,
) {
    path.push(cmd.get_name().to_string());
    let subs: Vec<&Command> = cmd.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    if path.len() > 1 && (subs.is_empty() || !cmd.is_subcommand_required_set()) {
        out.push((path.clone(), cmd));
    }
    for sub in subs {
        collect(sub, path, out);
    }
    path.pop();
}

fn about(cmd: &Command) -> String {
    cmd.get_about()
        .map(|s| s.to_string())
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn long_about(cmd: &Command) -> String {
    cmd.get_long_about()
        .or(cmd.get_about())
        .map(|s| s.to_string())
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// `bin sub [OPTIONS] <POSITIONAL> [OPTIONAL]`, and `<COMMAND>` when a subcommand is needed.
fn usage(path: &[String], cmd: &Command) -> String {
    let mut parts = vec![path.join(" ")];
    let options = cmd
        .get_arguments()
        .any(|a| !a.is_positional() && !a.is_hide_set() && !a.is_global_set());
    if options || path.len() == 1 {
        parts.push("[OPTIONS]".into());
    }
    for a in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        parts.push(value_syntax(a));
    }
    if cmd.get_subcommands().any(|c| !c.is_hide_set()) {
        parts.push(if cmd.is_subcommand_required_set() {
            "<COMMAND>".into()
        } else {
            "[COMMAND]".into()
        });
    }
    parts.join(" ")
}

/// A table of `args`: how each is written, its help, default, environment variable and the
/// values it takes.
fn arguments(out: &mut String, args: &[&Arg]) {
    let _ = writeln!(
        out,
        "| argument | what it does | default | environment | values |\n| --- | --- | --- | --- | --- |"
    );
    for a in args {
        let help = a
            .get_long_help()
            .or(a.get_help())
            .map(|s| s.to_string())
            .unwrap_or_default();
        let mut help = help.trim().to_string();
        if matches!(a.get_action(), ArgAction::Append)
            && !a.is_positional()
            && !help.contains("repeatable")
        {
            help.push_str(" (repeatable)");
        }
        let default = if a.get_action().takes_values() && !a.is_hide_default_value_set() {
            a.get_default_values()
                .iter()
                .map(|v| format!("`{}`", v.to_string_lossy()))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            String::new()
        };
        let env = match a.get_env() {
            Some(e) if !a.is_hide_env_set() => format!("`{}`", e.to_string_lossy()),
            _ => String::new(),
        };
        let values = if a.is_hide_possible_values_set() || !a.get_action().takes_values() {
            String::new()
        } else {
            a.get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| {
                    let names = v.get_name_and_aliases().collect::<Vec<_>>();
                    match names.split_first() {
                        Some((name, [])) => format!("`{name}`"),
                        Some((name, aliases)) => format!("`{name}` ({})", aliases.join(", ")),
                        None => String::new(),
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            syntax(a).replace('|', "\\|"),
            cell(&help),
            default,
            env,
            values
        );
    }
}

/// `-n, --lines <LINES>`, `--json`, `<FILE>`, `[NAME]`, `--http [ADDR]`.
fn syntax(a: &Arg) -> String {
    if a.is_positional() {
        return value_syntax(a);
    }
    let mut names = Vec::new();
    if let Some(s) = a.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = a.get_long() {
        names.push(format!("--{l}"));
    }
    let mut s = names.join(", ");
    if a.get_action().takes_values() {
        let name = value_name(a);
        let optional = a.get_num_args().is_some_and(|n| n.min_values() == 0);
        let _ = if optional {
            write!(s, " [{name}]")
        } else {
            write!(s, " <{name}>")
        };
    }
    s
}

fn value_syntax(a: &Arg) -> String {
    let name = value_name(a);
    if a.is_required_set() {
        format!("<{name}>")
    } else {
        format!("[{name}]")
    }
}

fn value_name(a: &Arg) -> String {
    match a.get_value_names() {
        Some([first, ..]) => first.to_string(),
        _ => a.get_id().as_str().to_uppercase(),
    }
}

/// Text fit for a table cell: paragraphs joined by `<br>`, pipes escaped.
fn cell(text: &str) -> String {
    text.trim()
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("<br>")
        .replace('|', "\\|")
}

/// GitHub's anchor for a heading: lower case, spaces as `-`, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Command {
        Command::new("tool")
            .about("A tool.")
            .arg(
                Arg::new("verbose")
                    .long("verbose")
                    .global(true)
                    .action(ArgAction::SetTrue)
                    .help("Say more."),
            )
            .subcommand(
                Command::new("run")
                    .about("Run | it.")
                    .arg(Arg::new("file").required(true).help("The file."))
                    .arg(
                        Arg::new("lang")
                            .long("lang")
                            .value_parser(["ts", "py"])
                            .default_value("ts")
                            .env("TOOL_LANG"),
                    ),
            )
            .subcommand(Command::new("secret").hide(true))
    }

    #[test]
    fn commands_arguments_defaults_env_and_values_are_listed_hidden_ones_are_not() {
        let doc = render(&tree());
        assert!(
            doc.contains("| [`tool run`](#tool-run) | Run \\| it. |"),
            "{doc}"
        );
        assert!(
            doc.contains("| `--verbose` | Say more. |  |  |  |"),
            "{doc}"
        );
        assert!(doc.contains("Usage: `tool run [OPTIONS] <FILE>`"), "{doc}");
        assert!(
            doc.contains("| `--lang <LANG>` |  | `ts` | `TOOL_LANG` | `ts`, `py` |"),
            "{doc}"
        );
        assert!(!doc.contains("secret"), "{doc}");
    }
}
