//! The crate's errors: [`SandboxError`], what the host is told when a worker cannot be
//! confined, and [`SetupError`], the layer the helper could not apply (every layer's module
//! fails with it).

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox layer `{layer}` is unavailable: {reason}; {remedy}")]
    Unavailable {
        layer: &'static str,
        reason: String,
        remedy: &'static str,
    },
    #[error("invalid sandbox request: {0}")]
    Invalid(String),
    #[error("cannot prepare the sandbox helper: {0}")]
    Io(#[from] std::io::Error),
}

/// A layer that could not be applied, and why.
#[derive(Debug)]
pub(crate) struct SetupError {
    pub layer: &'static str,
    pub reason: String,
}

impl SetupError {
    pub fn new(layer: &'static str, reason: String) -> Self {
        Self { layer, reason }
    }
}
