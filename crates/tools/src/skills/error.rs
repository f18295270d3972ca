//! What can go wrong with skills, each saying what to do.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A name, description, schema or file that breaks the rules; the text says which.
    #[error("{0}")]
    Invalid(String),
    #[error(
        "no skill is named {name:?}{hint}; listSkills() (Python: list_skills()) or search_tools show the saved ones"
    )]
    NotFound { name: String, hint: String },
    #[error(
        "{name:?} names more than one skill ({}); say which: {}",
        origins.join(", "),
        origins.iter().map(|o| format!("\"{o}/{name}\"")).collect::<Vec<_>>().join(" or ")
    )]
    Ambiguous { name: String, origins: Vec<String> },
    #[error(
        "skill {0:?} holds instructions only (no script of ours): read its SKILL.md instead of calling it"
    )]
    NotRunnable(String),
    #[error(
        "saving skills is off (skills.save is false in the settings); set it to true to save from code"
    )]
    SaveOff,
    #[error(
        "there is no skills directory: set skills.dir in the settings (HOME and XDG_DATA_HOME are unset)"
    )]
    NoDirectory,
    /// Something under a skills directory that is not read: a link, not a regular file, too
    /// large, not UTF-8.
    #[error(transparent)]
    Tree(#[from] super::beneath::TreeError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl SkillError {
    pub fn io(path: &Path, source: std::io::Error) -> SkillError {
        SkillError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
