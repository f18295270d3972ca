//! Compiles the prelude (`src/prelude.js`) to QuickJS bytecode once, at build time, so a
//! worker loads it instead of parsing 43 KB of source at every start.
//!
//! The prelude is a function expression; it is compiled as a module whose default export is
//! that function (`export default (function (host) { ... })`), the one form QuickJS writes
//! as bytecode through rquickjs. The build uses the same rquickjs (and so the same QuickJS)
//! as the worker, and the worker falls back to the source should the bytecode not load.

use rquickjs::{Context, Module, Runtime, WriteOptions};

/// The module name the worker loads the prelude under: also the file name stack traces show.
const NAME: &str = "prelude.js";

fn main() -> Result<(), String> {
    println!("cargo:rerun-if-changed=src/prelude.js");
    println!("cargo:rerun-if-changed=build.rs");
    let source = std::fs::read_to_string("src/prelude.js")
        .map_err(|e| format!("reading src/prelude.js: {e}"))?;
    let bytecode = compile(&source).map_err(|e| format!("compiling the prelude: {e}"))?;
    let out = std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?;
    std::fs::write(std::path::Path::new(&out).join("prelude.qjsbc"), bytecode)
        .map_err(|e| format!("writing the prelude's bytecode: {e}"))
}

fn compile(source: &str) -> Result<Vec<u8>, String> {
    let rt = Runtime::new().map_err(|e| e.to_string())?;
    let ctx = Context::full(&rt).map_err(|e| e.to_string())?;
    ctx.with(|ctx| {
        let module = Module::declare(ctx.clone(), NAME, module_source(source)).map_err(|e| {
            let detail = ctx.catch();
            format!("{e}: {detail:?}")
        })?;
        module
            .write(WriteOptions::default())
            .map_err(|e| e.to_string())
    })
}

/// The prelude as a module: the function expression becomes the default export. The source
/// ends without a statement terminator after the expression, so one is added.
fn module_source(source: &str) -> String {
    format!(
        "export default {};\n",
        source.trim_end().trim_end_matches(';')
    )
}
