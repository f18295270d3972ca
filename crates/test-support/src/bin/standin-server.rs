//! `standin-server NAME`: a stand-in for a server the product line's documents name
//! (`zen`, `git`, `playwright`, `notion-workspace`), on stdio.
//!
//! `standin-server proxy NAME ROOT -- COMMAND ARGS...`: the MCP server `COMMAND` (a real one)
//! served as `NAME` through `ROOT`: absolute paths in arguments are taken under `ROOT`, and
//! `ROOT` is removed from answers (see `test_support::standin`).

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use test_support::standin::{Proxy, StandIn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("proxy") => {
            let [_, name, root, dashes, command, rest @ ..] = args.as_slice() else {
                anyhow::bail!("usage: standin-server proxy NAME ROOT -- COMMAND ARGS...");
            };
            anyhow::ensure!(dashes == "--", "expected -- before the upstream's command");
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(rest).kill_on_drop(true);
            let upstream = ().serve(TokioChildProcess::new(cmd)?).await?;
            let service = Proxy::new(name, root.into(), upstream)
                .serve(rmcp::transport::stdio())
                .await?;
            service.waiting().await?;
        }
        Some(name) => {
            let Some(standin) = StandIn::new(name) else {
                anyhow::bail!(
                    "no stand-in named {name} (one of {:?})",
                    test_support::standin::NAMES
                );
            };
            let service = standin.serve(rmcp::transport::stdio()).await?;
            service.waiting().await?;
        }
        None => anyhow::bail!("usage: standin-server NAME | proxy NAME ROOT -- COMMAND ARGS..."),
    }
    Ok(())
}
