//! `code-executor-mcp setup`: adds this server to the MCP clients found on the machine.
//!
//! For each client (Claude Code, Claude Desktop, Cursor, VS Code, Windsurf, Codex, Gemini
//! CLI; [`clients`]) it plans the edit of the client's own file as that client's `mcp add`
//! would write it ([`edit`], pure), shows a unified diff, and writes only after the person
//! confirms (or with `--yes`), each file backed up first ([`backup`]). A second run changes
//! nothing. With `--switch-off-others` (asked interactively) it also switches the client's
//! other servers off in the client's own way, so the agent sees only our tools, while we keep
//! reaching them (the config loader reads disabled entries). `--undo` restores the newest
//! run's backups.
//!
//! Interactive when standard input and error are a terminal (prompts: `dialoguer`);
//! otherwise it needs `--yes` or `--dry-run`, so a script never hangs on a question.

pub mod backup;
pub mod clients;
pub mod edit;
pub mod error;
pub mod json_text;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use clients::{ClientId, ClientPlan, FileChange, Found, Want};
use edit::Launch;
use tools::config::sources::Places;
use tools::console::say;

/// Environment variable through which a launcher (the npm package run by `npx`) tells
/// `setup` the command that starts us: a JSON array, e.g. `["npx", "-y", "pkg"]`.
pub const LAUNCH_ENV: &str = "CODE_EXECUTOR_MCP_LAUNCH";
/// The name of the PyPI distribution (the one `uvx`/`pipx run` take).
pub const PYPI_NAME: &str = "code-executor-mcp";

#[derive(Debug, Clone, clap::Args)]
pub struct SetupArgs {
    /// Only this client (repeatable); it is set up even when it does not look installed.
    #[arg(long = "client", value_enum, value_name = "NAME")]
    clients: Vec<ClientId>,
    /// Write without asking (for scripts).
    #[arg(long, short = 'y')]
    yes: bool,
    /// Show what would change; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Also switch each client's other MCP servers off, in the client's own way, so the
    /// agent sees only code-executor's tools; code-executor keeps reaching them.
    #[arg(long)]
    switch_off_others: bool,
    /// Restore the files as they were before the last setup run.
    #[arg(long, conflicts_with_all = ["switch_off_others", "command", "name", "args", "env"])]
    undo: bool,
    /// With --undo: also restore files changed since setup wrote them.
    #[arg(long, requires = "undo")]
    force: bool,
    /// The server's name in the clients' configs.
    #[arg(long, default_value = "code-executor", value_name = "NAME")]
    name: String,
    /// The command clients run to start us (default: this binary, or the `npx`/`uvx`/`pipx`
    /// command that started it).
    #[arg(long, value_name = "PROGRAM")]
    command: Option<String>,
    /// An argument to start us with (repeatable): after --command's program, or after the
    /// default command (e.g. `--arg serve --arg --pool-size=4`).
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    args: Vec<String>,
    /// An environment variable the clients set when they start us, KEY=VALUE (repeatable),
    /// written into each client's entry in that client's format (e.g.
    /// `--env CODE_EXECUTOR_CONFIG_PATH=/home/me/ce.json`).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    env: Vec<(String, String)>,
}

/// One `--env KEY=VALUE`: the key as shells and clients take it.
/// Why a `--env` value is refused.
#[derive(Debug, thiserror::Error)]
enum EnvArgError {
    #[error("{0:?}: expected KEY=VALUE")]
    NoEquals(String),
    #[error("{0:?} is not a variable name: use letters, digits and '_', not starting with a digit")]
    BadName(String),
}

fn parse_env(text: &str) -> Result<(String, String), EnvArgError> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(EnvArgError::NoEquals(text.into()));
    };
    let valid = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(EnvArgError::BadName(key.into()));
    }
    Ok((key.to_string(), value.to_string()))
}

/// Runs `setup`.
pub fn run(args: &SetupArgs) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let places = Places::from_env(cwd);
    let config_dir = places
        .config_dir
        .clone()
        .context("neither HOME nor XDG_CONFIG_HOME is set: nowhere to look for clients")?;
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !interactive && !args.yes && !args.dry_run {
        anyhow::bail!(
            "standard input is not a terminal, so setup cannot ask before it writes: pass --yes to write, or --dry-run to see the changes"
        );
    }
    if args.undo {
        return undo(args, &config_dir, interactive);
    }
    if args.name.trim().is_empty() || args.name.contains(['.', '"', '\n']) {
        anyhow::bail!("--name {:?}: use letters, digits, '-' or '_'", args.name);
    }
    let launch = launch(args)?;
    let self_exe = std::env::current_exe().ok();
    let found = clients::find(&places);
    let chosen: Vec<&Found> = if args.clients.is_empty() {
        found.iter().filter(|f| f.evidence.is_some()).collect()
    } else {
        found
            .iter()
            .filter(|f| args.clients.contains(&f.client))
            .collect()
    };
    if chosen.is_empty() {
        say(
            "No MCP client found (Claude Code, Claude Desktop, Cursor, VS Code, Windsurf, Codex, Gemini CLI).",
        );
        say("Name one to set it up anyway: code-executor-mcp setup --client claude-code");
        say(&snippet(&args.name, &launch));
        return Ok(ExitCode::SUCCESS);
    }
    say(&format!(
        "Adding {:?} ({}) to:",
        args.name,
        shell_words(&launch)
    ));
    for f in &chosen {
        say(&format!(
            "  {:<15} {}{}",
            f.client.title(),
            f.path.display(),
            f.evidence
                .as_ref()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default()
        ));
    }
    let chosen = if interactive && !args.yes && !args.dry_run && args.clients.is_empty() {
        pick_clients(chosen)?
    } else {
        chosen
    };
    let switch_off = args.switch_off_others
        || (interactive
            && !args.yes
            && !args.dry_run
            && {
                // Ask only when some client can switch servers off and has others to switch.
                let mut others: Vec<String> = Vec::new();
                for f in chosen.iter().filter(|f| f.client.can_switch_off()) {
                    let want = Want {
                        name: &args.name,
                        launch: &launch,
                        switch_off_others: false,
                        places: &places,
                        self_exe: self_exe.as_deref(),
                    };
                    if let Ok(p) = clients::plan(f, &want)
                        && !p.others.is_empty()
                    {
                        others.push(format!("{} ({})", f.client.title(), p.others.join(", ")));
                    }
                }
                !others.is_empty()
                    && ask(
                        &format!(
                            "Also switch the clients' other MCP servers off, so the agent sees only code-executor's tools? code-executor keeps reaching them. {}",
                            others.join("; ")
                        ),
                        false,
                    )?
            });
    let mut failed = false;
    let mut approved: Vec<(ClientId, ClientPlan)> = Vec::new();
    for f in chosen {
        let want = Want {
            name: &args.name,
            launch: &launch,
            switch_off_others: switch_off,
            places: &places,
            self_exe: self_exe.as_deref(),
        };
        let plan = match clients::plan(f, &want) {
            Ok(p) => p,
            Err(e) => {
                say(&format!("\n{}: skipped: {e}", f.client.title()));
                failed = true;
                continue;
            }
        };
        say(&format!("\n== {} ({})", f.client.title(), f.path.display()));
        for note in &plan.notes {
            say(&format!("note: {note}"));
        }
        if plan.changes.is_empty() {
            say("already set up: nothing to change");
            continue;
        }
        say(&summary(&args.name, &plan));
        for c in &plan.changes {
            say(diff(c).trim_end());
        }
        if args.dry_run {
            continue;
        }
        if args.yes
            || ask(
                &format!("Write these changes to {}?", f.client.title()),
                true,
            )?
        {
            approved.push((f.client, plan));
        } else {
            say(&format!("{}: left as it was", f.client.title()));
        }
    }
    if args.dry_run {
        say("\n--dry-run: nothing written");
    } else if approved.is_empty() {
        say("\nNothing written.");
    } else {
        let changes: Vec<&FileChange> = approved.iter().flat_map(|(_, p)| &p.changes).collect();
        let dir = backup::apply(&config_dir, &changes)?;
        say("");
        for (client, plan) in &approved {
            say(&format!(
                "{}: {}",
                client.title(),
                summary(&args.name, plan)
            ));
        }
        say(&format!(
            "Backups in {}; `code-executor-mcp setup --undo` puts the files back.",
            dir.display()
        ));
        say("Restart the clients (or reload their MCP servers) to pick the change up.");
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn summary(name: &str, plan: &ClientPlan) -> String {
    let mut parts = Vec::new();
    if plan.entry_changed {
        parts.push(format!("add {name:?}"));
    }
    if !plan.switched_off.is_empty() {
        parts.push(format!(
            "switch off {} ({}); code-executor keeps reaching them",
            plan.switched_off.len(),
            plan.switched_off.join(", ")
        ));
    }
    if parts.is_empty() {
        parts.push("rewrite the file".into());
    }
    parts.join("; ")
}

/// A unified diff of one file's change.
fn diff(c: &FileChange) -> String {
    let before = c.before.as_deref().unwrap_or("");
    let path = c.path.display().to_string();
    let old_name = if c.before.is_some() {
        path.clone()
    } else {
        "/dev/null (new file)".to_string()
    };
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(before, &c.after)
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &path)
        .to_string()
}

fn ask(prompt: &str, default: bool) -> anyhow::Result<bool> {
    dialoguer::Confirm::new()
        .with_prompt(prompt)
        .default(default)
        .interact()
        .context("the prompt failed (no terminal?)")
}

fn pick_clients(found: Vec<&Found>) -> anyhow::Result<Vec<&Found>> {
    let items: Vec<String> = found
        .iter()
        .map(|f| format!("{} ({})", f.client.title(), f.path.display()))
        .collect();
    let picked = dialoguer::MultiSelect::new()
        .with_prompt("Set up code-executor in (space toggles, enter confirms)")
        .items(&items)
        .defaults(&vec![true; items.len()])
        .interact()
        .context("the prompt failed (no terminal?)")?;
    Ok(picked
        .into_iter()
        .filter_map(|i| found.get(i).copied())
        .collect())
}

/// The command that starts us, as the clients should run it: `--command` or the default
/// one, then every `--arg`, with the `--env` variables.
fn launch(args: &SetupArgs) -> anyhow::Result<Launch> {
    let mut launch = base_launch(args)?;
    launch.args.extend(args.args.iter().cloned());
    for (i, (key, _)) in args.env.iter().enumerate() {
        if args.env[..i].iter().any(|(k, _)| k == key) {
            anyhow::bail!("--env {key}=... is given twice: give each variable once");
        }
    }
    launch.env = args.env.clone();
    Ok(launch)
}

fn base_launch(args: &SetupArgs) -> anyhow::Result<Launch> {
    if let Some(command) = &args.command {
        return Ok(Launch {
            command: command.clone(),
            ..Launch::default()
        });
    }
    if let Some(spec) = std::env::var_os(LAUNCH_ENV) {
        let list: Vec<String> = serde_json::from_str(&spec.to_string_lossy())
            .with_context(|| format!("{LAUNCH_ENV} is not a JSON array of strings"))?;
        if let Some((command, rest)) = list.split_first() {
            return Ok(Launch {
                command: command.clone(),
                args: rest.to_vec(),
                env: vec![],
            });
        }
    }
    let exe = std::env::current_exe().context("cannot locate our own binary")?;
    Ok(launch_for(&std::fs::canonicalize(&exe).unwrap_or(exe)))
}

/// A binary in a throwaway cache (uvx, pipx run) is replaced by the command that fetches it
/// again; any other binary is named by its absolute path (clients started from a desktop
/// do not see the shell's PATH).
fn launch_for(exe: &Path) -> Launch {
    let s = exe.to_string_lossy();
    if s.contains("/uv/archive-v") || s.contains("/uv/builds-v") {
        return Launch {
            command: "uvx".into(),
            args: vec![PYPI_NAME.into()],
            env: vec![],
        };
    }
    if s.contains("/pipx/.cache/") {
        return Launch {
            command: "pipx".into(),
            args: vec!["run".into(), PYPI_NAME.into()],
            env: vec![],
        };
    }
    Launch {
        command: s.into_owned(),
        args: vec![],
        env: vec![],
    }
}

fn shell_words(l: &Launch) -> String {
    let env = l.env.iter().map(|(k, v)| format!("{k}={v}"));
    env.chain(std::iter::once(l.command.clone()))
        .chain(l.args.iter().cloned())
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./@=:+".contains(c))
            {
                w
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What to paste into a client we do not know.
pub fn snippet(name: &str, launch: &Launch) -> String {
    let entry = edit::json_entry(edit::EntryShape::Plain, launch);
    let v = serde_json::json!({ "mcpServers": { name: entry } });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

fn undo(args: &SetupArgs, config_dir: &Path, interactive: bool) -> anyhow::Result<ExitCode> {
    let Some((dir, manifest)) = backup::latest(config_dir)? else {
        say(&format!(
            "Nothing to undo: no setup run with backups in {}",
            backup::root(config_dir).display()
        ));
        return Ok(ExitCode::SUCCESS);
    };
    say(&format!(
        "Undoing the setup run of {} ({})",
        manifest.created,
        dir.display()
    ));
    let restores = backup::restores(&dir, &manifest)?;
    let mut blocked: Vec<PathBuf> = Vec::new();
    for r in &restores {
        if let Some(why) = &r.keep {
            say(&format!("\n{}: {why}", r.path.display()));
            blocked.push(r.path.clone());
            continue;
        }
        if r.changed_since && !args.force {
            say(&format!(
                "\n{}: changed since setup wrote it; left alone (--force restores it anyway)",
                r.path.display()
            ));
            blocked.push(r.path.clone());
            continue;
        }
        let change = FileChange {
            path: r.path.clone(),
            before: r.now.clone(),
            after: r.back.clone().unwrap_or_default(),
        };
        say("");
        if r.back.is_none() {
            say(&format!(
                "{}: setup created it; remove it",
                r.path.display()
            ));
        } else {
            say(&diff(&change));
        }
    }
    if args.dry_run {
        say("\n--dry-run: nothing written");
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes && interactive && !ask("Restore these files?", true)? {
        say("Nothing restored.");
        return Ok(ExitCode::SUCCESS);
    }
    for r in restores.iter().filter(|r| !blocked.contains(&r.path)) {
        backup::restore(r).with_context(|| format!("cannot restore {}", r.path.display()))?;
        if r.changed_since && r.now.is_some() {
            say(&format!(
                "{}: its text before this undo is kept in {}",
                r.path.display(),
                r.save_as.display()
            ));
        }
        say(&format!("restored {}", r.path.display()));
    }
    if blocked.is_empty() {
        backup::mark_undone(&dir, manifest)?;
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::FAILURE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throwaway_caches_become_the_command_that_fetches_again() {
        let l = launch_for(Path::new(
            "/home/u/.cache/uv/archive-v0/abc/bin/code-executor-mcp",
        ));
        assert_eq!(
            (l.command.as_str(), l.args),
            ("uvx", vec![PYPI_NAME.to_string()])
        );
        let l = launch_for(Path::new(
            "/home/u/.local/pipx/.cache/abc/bin/code-executor-mcp",
        ));
        assert_eq!(l.args, ["run", PYPI_NAME]);
        let l = launch_for(Path::new("/usr/local/bin/code-executor-mcp"));
        assert_eq!(l.command, "/usr/local/bin/code-executor-mcp");
        assert!(l.args.is_empty());
    }

    #[test]
    fn shell_words_quote_what_needs_it() {
        let l = Launch {
            command: "/a b/x".into(),
            args: vec!["-y".into(), "it's".into()],
            env: vec![],
        };
        assert_eq!(shell_words(&l), "'/a b/x' -y 'it'\\''s'");
    }
}
