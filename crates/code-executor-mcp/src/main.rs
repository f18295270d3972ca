//! The `code-executor-mcp` binary. Helper modes (sandbox helper, worker, demo server, the
//! generator of the reference documents) are chosen from the first argument before any thread
//! or runtime starts, so a worker never runs the server's setup.

use std::process::ExitCode;

fn main() -> ExitCode {
    let first = std::env::args_os().nth(1);
    match first.as_ref().and_then(|a| a.to_str()) {
        Some(sandbox::HELPER_ARG) => sandbox::helper_main_with(inline_worker),
        Some(code_executor_mcp::WORKER_ARG) => {
            let kind = std::env::args_os().nth(2);
            match kind.as_ref().and_then(|a| a.to_str()) {
                Some("js") => js_worker_main(),
                _ => ExitCode::from(2),
            }
        }
        Some(code_executor_mcp::DEMO_SERVER_ARG) => code_executor_mcp::demo::serve_demo_main(),
        Some(code_executor_mcp::SYNTHETIC_SERVER_ARG) => code_executor_mcp::serve_synthetic_main(),
        Some(code_executor_mcp::cli::REFERENCE_ARG) => code_executor_mcp::cli::reference_main(),
        _ => {
            // Large blocks freed are kept for reuse (`sandbox::heap`): a large value passes
            // through several buffers on each hop. The server gives them back once it is quiet.
            sandbox::heap::keep_freed_blocks();
            code_executor_mcp::cli::main()
        }
    }
}

/// The JavaScript worker, which keeps large freed blocks for reuse as the server does (it
/// lives for its run). The sandbox helper does not: its payload would inherit what it kept.
fn js_worker_main() -> ExitCode {
    sandbox::heap::keep_freed_blocks();
    js_worker::worker_main()
}

/// The worker modes the sandbox helper runs in its payload process instead of executing this
/// binary again (see `sandbox::helper_main_with`).
fn inline_worker(args: &[std::ffi::OsString]) -> Option<ExitCode> {
    let args: Vec<&str> = args.iter().map(|a| a.to_str()).collect::<Option<_>>()?;
    match args.as_slice() {
        [code_executor_mcp::WORKER_ARG, "js"] => Some(js_worker_main()),
        _ => None,
    }
}
