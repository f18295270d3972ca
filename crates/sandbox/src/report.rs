//! Layer-by-layer status for `doctor`: what [`crate::probe`] returns, whatever the backend
//! (its layers, their names and remedies, come from the backend's table).

use std::fmt;

use crate::policy::SandboxMode;

/// One layer of the sandbox and whether it is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerStatus {
    pub name: &'static str,
    pub enforced: bool,
    /// Part of the minimum guarantee: Enforce mode refuses to run without it.
    pub required: bool,
    pub detail: String,
    /// What to do when it is missing (the backend's words).
    pub remedy: &'static str,
}

/// Every layer, in the order the helper applies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxReport {
    pub mode: SandboxMode,
    pub layers: Vec<LayerStatus>,
}

impl SandboxReport {
    /// The first required layer that is not enforced, if any.
    pub fn first_missing_required(&self) -> Option<&LayerStatus> {
        self.layers.iter().find(|l| l.required && !l.enforced)
    }

    /// Whether every required layer is in force.
    pub fn minimum_guarantee_met(&self) -> bool {
        self.first_missing_required().is_none()
    }

    pub fn layer(&self, name: &str) -> Option<&LayerStatus> {
        self.layers.iter().find(|l| l.name == name)
    }

    /// Every layer of a backend's table (name, required, remedy), each `enforced` or not.
    pub(crate) fn all(
        mode: SandboxMode,
        table: &[(&'static str, bool, &'static str)],
        enforced: bool,
        detail: &str,
    ) -> Self {
        let layers = table
            .iter()
            .map(|&(name, required, remedy)| LayerStatus {
                name,
                enforced,
                required,
                detail: detail.to_owned(),
                remedy,
            })
            .collect();
        Self { mode, layers }
    }

    pub(crate) fn set(&mut self, name: &str, enforced: bool, detail: String) {
        if let Some(l) = self.layers.iter_mut().find(|l| l.name == name) {
            l.enforced = enforced;
            l.detail = detail;
        }
    }
}

impl fmt::Display for SandboxReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "sandbox mode: {:?}", self.mode)?;
        for l in &self.layers {
            let mark = match (l.enforced, l.required) {
                (true, _) => "ok     ",
                (false, true) => "MISSING",
                (false, false) => "off    ",
            };
            writeln!(f, "  {mark} {:<18} {}", l.name, l.detail)?;
        }
        if self.mode == SandboxMode::Enforce {
            match self.first_missing_required() {
                None => writeln!(f, "minimum guarantee met")?,
                Some(l) => writeln!(
                    f,
                    "REFUSING to run code: `{}` is missing; {}",
                    l.name, l.remedy
                )?,
            }
        }
        Ok(())
    }
}
