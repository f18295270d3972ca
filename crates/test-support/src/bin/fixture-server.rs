//! `fixture-server [NAME]`: the fixture MCP server on stdio.

use rmcp::ServiceExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let name = std::env::args().nth(1).unwrap_or_else(|| "fixture".into());
    if std::env::var_os("FIXTURE_FAIL_TO_START").is_some() {
        anyhow::bail!("told to fail");
    }
    let service = test_support::fixture::Fixture::new(&name)
        .serve(rmcp::transport::stdio())
        .await?;
    service.waiting().await?;
    Ok(())
}
