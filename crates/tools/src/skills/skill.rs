//! One skill: an Agent Skills directory (`SKILL.md` with YAML frontmatter, plus its files),
//! read from disk, with what code mode adds in the frontmatter's `metadata` (the language, the
//! script, the input schema, the upstream tools it calls and a hash of each one's schema).
//!
//! The frontmatter is the user's: it is parsed as YAML (hand edits welcome) and kept verbatim
//! as JSON for `skills/list`. What we write is plain YAML too: every scalar a JSON string,
//! which YAML reads as a double-quoted scalar.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::beneath::{Dir, Root, TreeError, plain_segment};
use super::error::SkillError;

/// The manifest file every skill has at its root.
pub const SKILL_FILE: &str = "SKILL.md";
/// Our keys in the frontmatter's `metadata` (Agent Skills: a map of strings).
pub const META_LANGUAGE: &str = "code-executor-mcp/language";
pub const META_SCRIPT: &str = "code-executor-mcp/script";
pub const META_INPUT_SCHEMA: &str = "code-executor-mcp/input-schema";
pub const META_TOOLS: &str = "code-executor-mcp/tools";
pub const META_VERSION: &str = "code-executor-mcp/version";
/// The authenticated principal that saved it (over HTTP with tokens or OAuth), if any.
pub const META_OWNER: &str = "code-executor-mcp/owner";
/// Longest `SKILL.md` read: a planted huge one is refused unread. Every `SKILL.md` we write
/// is checked to fit (so what we save always reads back, and its owner can be told); the
/// Agent Skills format wants it short (a description of 1,024 characters, instructions
/// under 5,000 words), so 1 MiB leaves room for any hand-written one.
pub const MAX_SKILL_FILE: u64 = 1 << 20;
/// Longest script read (the skills extension's limit for a whole skill is 16 MiB); what we
/// save is bounded lower (`store::MAX_SCRIPT_BYTES`), a hand-written one may be larger.
pub const MAX_SCRIPT_READ: u64 = 16 << 20;

/// server -> tool -> `sha256:<hex>` of its schemas.
pub type ToolHashes = BTreeMap<String, BTreeMap<String, String>>;
/// server -> tool -> `{"inputSchema", "outputSchema"}`.
pub type ToolSchemas = BTreeMap<String, BTreeMap<String, Value>>;

/// The language a skill's script is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillLanguage {
    TypeScript,
    Python,
}

impl SkillLanguage {
    pub fn parse(s: &str) -> Result<SkillLanguage, SkillError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "typescript" | "ts" | "javascript" | "js" => Ok(SkillLanguage::TypeScript),
            "python" | "py" => Ok(SkillLanguage::Python),
            other => Err(SkillError::Invalid(format!(
                "language {other:?} is not one we run: say \"typescript\" or \"python\""
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SkillLanguage::TypeScript => "typescript",
            SkillLanguage::Python => "python",
        }
    }

    /// The script's file name in the skill's directory.
    pub fn script_file(self) -> &'static str {
        match self {
            SkillLanguage::TypeScript => "skill.ts",
            SkillLanguage::Python => "skill.py",
        }
    }
}

/// Where a skill comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The user's skills directory: what `saveSkill` writes.
    User,
    /// The working directory's project (`.code-executor/skills`), when the project is trusted.
    Project,
    /// A directory of Agent Skills the user configured (`skills.serve`): served and found,
    /// callable when it carries a script of ours.
    Served,
}

impl Origin {
    pub fn as_str(&self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Project => "project",
            Origin::Served => "served",
        }
    }
}

/// A skill as read from its directory.
#[derive(Debug, Clone)]
pub struct Skill {
    /// `name` of the frontmatter, which is also the directory's name.
    pub name: String,
    pub description: String,
    /// Its directory, for display: its files are read beneath `root`, never by this path.
    pub dir: PathBuf,
    /// The skills directory it is in.
    pub root: Root,
    pub origin: Origin,
    /// The frontmatter as the user wrote it, as JSON.
    pub frontmatter: Map<String, Value>,
    /// What code mode needs to run it, when it is one of ours.
    pub code: Option<CodeSkill>,
}

/// A skill that runs: its script and what was recorded when it was saved.
#[derive(Debug, Clone)]
pub struct CodeSkill {
    pub language: SkillLanguage,
    /// The script's file name, relative to the skill's directory.
    pub script: String,
    pub input_schema: Option<Value>,
    /// server -> tool -> `sha256:<hex>` of the tool's schemas when the skill was saved.
    pub tools: ToolHashes,
    pub version: u32,
    /// Who may save over it: the authenticated principal that saved it, or anyone that is
    /// not authenticated (stdio, loopback) when `None`.
    pub owner: Option<String>,
}

impl Skill {
    /// Reads the skill `name` in the skills directory `at` (opened from `root`): `None` when
    /// there is no entry of that name. Nothing is followed: a link where its directory or
    /// its `SKILL.md` should be is an error, as is any `SKILL.md` that cannot be read whole
    /// and parsed (so a skill whose owner cannot be told is never taken for one without).
    pub fn read_in(
        at: &Dir,
        root: &Root,
        name: &str,
        origin: Origin,
    ) -> Result<Option<Skill>, SkillError> {
        let dir = match at.dir(name) {
            Ok(d) => d,
            Err(TreeError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let file = dir.path().join(SKILL_FILE);
        let text = match dir.read_text(SKILL_FILE, MAX_SKILL_FILE) {
            Ok(t) => t,
            Err(TreeError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(SkillError::Invalid(format!(
                    "{} holds no {SKILL_FILE}, so it is not a skill (an Agent Skill is a \
                     directory with a {SKILL_FILE} at its root)",
                    dir.path().display()
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let frontmatter = parse_frontmatter(&text)
            .map_err(|why| SkillError::Invalid(format!("{}: {why}", file.display())))?;
        let name_field = string_field(&frontmatter, "name").ok_or_else(|| {
            SkillError::Invalid(format!("{}: no `name` in its frontmatter", file.display()))
        })?;
        let description = string_field(&frontmatter, "description").ok_or_else(|| {
            SkillError::Invalid(format!(
                "{}: no `description` in its frontmatter",
                file.display()
            ))
        })?;
        check_name(&name_field)?;
        if name_field != name {
            return Err(SkillError::Invalid(format!(
                "{}: its name {name_field:?} is not its directory's name {name:?} (Agent Skills: they must be equal)",
                file.display()
            )));
        }
        let code = code_skill(&frontmatter)
            .map_err(|why| SkillError::Invalid(format!("{}: {why}", file.display())))?;
        Ok(Some(Skill {
            name: name_field,
            description,
            dir: dir.path().to_path_buf(),
            root: root.clone(),
            origin,
            frontmatter,
            code,
        }))
    }

    /// Its directory, opened again beneath its root (no component followed).
    pub fn open(&self) -> Result<Dir, SkillError> {
        Ok(self.root.open()?.dir(&self.name)?)
    }

    /// The script's source, for a skill that runs.
    pub fn script_source(&self) -> Result<Option<(SkillLanguage, String)>, SkillError> {
        let Some(code) = &self.code else {
            return Ok(None);
        };
        let text = self.open()?.read_text(&code.script, MAX_SCRIPT_READ)?;
        Ok(Some((code.language, text)))
    }
}

/// What is wrong with a `SKILL.md`'s frontmatter, or with what code mode recorded in it.
#[derive(Debug, thiserror::Error)]
pub enum FrontmatterError {
    #[error("it does not begin with YAML frontmatter (a first line `---`)")]
    NoStart,
    #[error("its frontmatter has no closing `---` line")]
    NoEnd,
    #[error("its frontmatter is not valid YAML: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("its frontmatter is not a mapping of fields")]
    NotAMap,
    #[error("its `metadata` is not a map of fields")]
    MetadataNotAMap,
    #[error("metadata {0} is not a string")]
    NotAString(&'static str),
    #[error(
        "metadata {META_OWNER} without {META_LANGUAGE}: a saved skill whose record is cut short"
    )]
    OwnerWithoutLanguage,
    #[error("{0}")]
    Language(Box<SkillError>),
    #[error("metadata {META_SCRIPT} {0:?} must name a file at the skill's root")]
    Script(String),
    #[error("metadata {META_INPUT_SCHEMA} is not JSON: {0}")]
    InputSchema(serde_json::Error),
    #[error("metadata {META_TOOLS} is not a JSON object of server -> tool -> hash: {0}")]
    Tools(serde_json::Error),
}

/// The frontmatter of a `SKILL.md` (between a first line `---` and the next `---`), as JSON.
pub fn parse_frontmatter(text: &str) -> Result<Map<String, Value>, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(FrontmatterError::NoStart);
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(FrontmatterError::NoEnd);
    }
    let value: Value = serde_yaml_ng::from_str(&yaml)?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(FrontmatterError::NotAMap),
    }
}

fn string_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key)
        .and_then(Value::as_str)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// What code mode recorded in `metadata`, if anything.
fn code_skill(frontmatter: &Map<String, Value>) -> Result<Option<CodeSkill>, FrontmatterError> {
    let meta = match frontmatter.get("metadata") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(m)) => m,
        // Agent Skills: a map of strings. Anything else cannot say whose it is.
        Some(_) => return Err(FrontmatterError::MetadataNotAMap),
    };
    // Ours are strings: one that is something else is not taken as absent (an owner that
    // cannot be read must not read as "no owner").
    for key in [
        META_LANGUAGE,
        META_SCRIPT,
        META_INPUT_SCHEMA,
        META_TOOLS,
        META_VERSION,
        META_OWNER,
    ] {
        if meta.get(key).is_some_and(|v| !v.is_string()) {
            return Err(FrontmatterError::NotAString(key));
        }
    }
    let text = |k: &str| meta.get(k).and_then(Value::as_str);
    let Some(language) = text(META_LANGUAGE) else {
        if meta.contains_key(META_OWNER) {
            return Err(FrontmatterError::OwnerWithoutLanguage);
        }
        return Ok(None);
    };
    let language =
        SkillLanguage::parse(language).map_err(|e| FrontmatterError::Language(Box::new(e)))?;
    let script =
        text(META_SCRIPT).map_or_else(|| language.script_file().to_string(), str::to_string);
    if !plain_segment(&script) || script.starts_with('.') {
        return Err(FrontmatterError::Script(script));
    }
    let input_schema = match text(META_INPUT_SCHEMA) {
        None => None,
        Some(s) => Some(serde_json::from_str::<Value>(s).map_err(FrontmatterError::InputSchema)?),
    };
    let tools = match text(META_TOOLS) {
        None => BTreeMap::new(),
        Some(s) => serde_json::from_str(s).map_err(FrontmatterError::Tools)?,
    };
    let version = text(META_VERSION).and_then(|v| v.parse().ok()).unwrap_or(1);
    Ok(Some(CodeSkill {
        language,
        script,
        input_schema,
        tools,
        version,
        owner: text(META_OWNER).map(str::to_string),
    }))
}

/// The Agent Skills naming rules: 1 to 64 characters, lowercase letters, digits and hyphens,
/// no hyphen first, last or twice in a row.
pub fn check_name(name: &str) -> Result<(), SkillError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err(SkillError::Invalid(format!(
            "the skill name {:?} does not follow the Agent Skills rules: 1 to 64 lowercase \
             letters, digits and single hyphens, not starting or ending with one (e.g. \
             \"weekly-report\")",
            name.chars().take(80).collect::<String>()
        )))
    }
}

/// A JSON string, which YAML reads as the same double-quoted scalar.
pub fn yaml_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_agent_skills_rules() {
        for good in ["a", "weekly-report", "csv2json", &"x".repeat(64)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Upper",
            "-a",
            "a-",
            "a--b",
            "a_b",
            "a.b",
            "a/b",
            "../x",
            &"x".repeat(65),
            "é",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn frontmatter_is_yaml_and_kept_verbatim() {
        let text = "---\nname: pdf\ndescription: >\n  Extract text\n  from PDFs\nlicense: MIT\nmetadata:\n  version: \"2\"\n  code-executor-mcp/language: python\n---\n# body\n";
        let fm = parse_frontmatter(text).unwrap();
        assert_eq!(fm["description"], "Extract text from PDFs\n");
        assert_eq!(fm["license"], "MIT");
        assert_eq!(fm["metadata"]["version"], "2");
        let code = code_skill(&fm).unwrap().unwrap();
        assert_eq!(code.language, SkillLanguage::Python);
        assert_eq!(code.script, "skill.py");
        for bad in [
            "name: x\n",
            "---\nname: [\n---\n",
            "---\n- a\n---\n",
            "---\nname: x\n",
        ] {
            assert!(parse_frontmatter(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hostile_yaml_is_refused_quickly() {
        // Billion laughs: aliases that expand exponentially.
        let mut yaml = String::from("---\nname: x\ndescription: d\na0: &a0 [\"lol\"]\n");
        for i in 1..30 {
            let p = i - 1;
            yaml.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        yaml.push_str("---\n");
        let started = std::time::Instant::now();
        assert!(parse_frontmatter(&yaml).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        // Deep nesting.
        let deep = format!(
            "---\nname: x\ndescription: d\nk: {}1{}\n---\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        assert!(parse_frontmatter(&deep).is_err());
    }

    #[test]
    fn what_we_write_reads_back() {
        let hostile = "a \"quoted\"\nline: with # and\t\\ and ünïcode --- 💥";
        let text = format!("---\nname: x\ndescription: {}\n---\n", yaml_string(hostile));
        assert_eq!(parse_frontmatter(&text).unwrap()["description"], hostile);
    }

    #[test]
    fn a_script_outside_the_skill_is_refused() {
        for script in ["../x.py", "/etc/passwd", ".hidden", "a/b.py"] {
            let fm: Map<String, Value> = serde_json::from_value(serde_json::json!({
                "name": "x", "description": "d",
                "metadata": {META_LANGUAGE: "python", META_SCRIPT: script}
            }))
            .unwrap();
            assert!(code_skill(&fm).is_err(), "{script}");
        }
    }
}
