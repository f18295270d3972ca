//! `fixture-server [NAME]`: the fixture MCP server on stdio.

use rmcp::ServiceExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let name = std::env::args().nth(1).unwrap_or_else(|| "fixture".into());
    if let Some(marker) = std::env::var_os("FIXTURE_START_MARKER") {
        // One line per start, so a test can count how often this server was started.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(marker)?;
        writeln!(f, "start")?;
    }
    if std::env::var_os("FIXTURE_FAIL_TO_START").is_some() {
        #[expect(
            clippy::print_stderr,
            reason = "a failing server's last words, as real ones say them"
        )]
        {
            eprintln!("fixture {name}: told to fail");
            // A server that prints its own configuration as it dies (FIXTURE_FAIL_SAYS names
            // the variable).
            if let Some(v) = std::env::var("FIXTURE_FAIL_SAYS")
                .ok()
                .and_then(|n| std::env::var(n).ok())
            {
                eprintln!("fixture {name}: my token is {v}");
            }
        }
        anyhow::bail!("told to fail");
    }
    if std::env::var_os("FIXTURE_HANG_AT_START").is_some() {
        // Never answers initialize: a server that hangs.
        std::future::pending::<()>().await;
    }
    let extra: usize = std::env::var("FIXTURE_EXTRA_TOOLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let service = test_support::fixture::Fixture::new(&name)
        .with_extra_tools(extra)
        .with_pause_tools(std::env::var_os("FIXTURE_PAUSE_TOOLS").is_some())
        .with_meta_tools(std::env::var_os("FIXTURE_META_TOOLS").is_some())
        .with_hostile_tools(std::env::var_os("FIXTURE_HOSTILE_TOOLS").is_some())
        .with_echo_v2(std::env::var_os("FIXTURE_ECHO_V2").is_some())
        .with_skills(std::env::var_os("FIXTURE_SKILLS").is_some())
        .with_gauge_tools(std::env::var_os("FIXTURE_GAUGE_TOOLS").is_some())
        .with_shape_tools(std::env::var_os("FIXTURE_SHAPE_TOOLS").is_some())
        .with_rug_pull(std::env::var_os("FIXTURE_RUG_PULL").is_some())
        .serve(rmcp::transport::stdio())
        .await?;
    service.waiting().await?;
    Ok(())
}
