//! An MCP config file in a temporary directory ([`TempConfig`]).

use std::path::PathBuf;

use serde_json::{Value, json};

/// An MCP config file in a temporary directory.
pub struct TempConfig {
    pub dir: PathBuf,
    pub path: PathBuf,
}

impl TempConfig {
    pub fn new(servers: Value) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "cem-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("mcp.json");
        std::fs::write(
            &path,
            serde_json::to_vec(&json!({ "mcpServers": servers })).expect("json"),
        )
        .expect("write config");
        TempConfig { dir, path }
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
