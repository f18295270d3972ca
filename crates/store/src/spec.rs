//! Where the records go, as `--store` and the `store` setting name it.

use std::path::PathBuf;

use crate::error::StoreError;

/// Where the records go, as `--store` and the `store` setting name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// In memory only: today's behaviour; nothing survives the process.
    None,
    /// An SQLite file (made if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL server (a `postgres://` or `postgresql://` URL).
    Postgres(String),
}

impl Spec {
    /// Parses `none`, `memory`, `sqlite:PATH` or a PostgreSQL URL; `sqlite` alone is
    /// `default_sqlite`.
    pub fn parse(s: &str, default_sqlite: &std::path::Path) -> Result<Spec, StoreError> {
        let t = s.trim();
        match t {
            "none" | "memory" => return Ok(Spec::None),
            "sqlite" | "" => return Ok(Spec::Sqlite(default_sqlite.to_path_buf())),
            _ => {}
        }
        if let Some(path) = t.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(StoreError::BadSpec(s.to_string()));
            }
            return Ok(Spec::Sqlite(PathBuf::from(path)));
        }
        if t.starts_with("postgres://") || t.starts_with("postgresql://") {
            return Ok(Spec::Postgres(t.to_string()));
        }
        Err(StoreError::BadSpec(s.to_string()))
    }

    /// As `--store` takes it (a URL with its password: for a child's arguments only).
    pub fn arg(&self) -> String {
        match self {
            Spec::None => "none".into(),
            Spec::Sqlite(p) => format!("sqlite:{}", p.display()),
            Spec::Postgres(url) => url.clone(),
        }
    }

    /// What it is, for messages (a URL without its password).
    pub fn display(&self) -> String {
        match self {
            Spec::None => "none (in memory only)".into(),
            Spec::Sqlite(p) => format!("sqlite:{}", p.display()),
            Spec::Postgres(url) => crate::postgres::redact(url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let d = std::path::Path::new("/data/store.sqlite3");
        assert_eq!(Spec::parse("none", d), Ok(Spec::None));
        assert_eq!(Spec::parse("memory", d), Ok(Spec::None));
        assert_eq!(Spec::parse("sqlite", d), Ok(Spec::Sqlite(d.into())));
        assert_eq!(
            Spec::parse("sqlite:/x/y.db", d),
            Ok(Spec::Sqlite("/x/y.db".into()))
        );
        assert!(matches!(
            Spec::parse("postgres://u:secret@h/db", d),
            Ok(Spec::Postgres(_))
        ));
        assert!(matches!(
            Spec::parse("mysql://h", d),
            Err(StoreError::BadSpec(_))
        ));
        let shown = Spec::parse("postgres://u:secret@h/db", d)
            .map(|s| s.display())
            .unwrap_or_default();
        assert!(!shown.contains("secret"), "{shown}");
    }
}
