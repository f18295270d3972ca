//! Where skills live and how they are listed, found and saved.
//!
//! Three kinds of directory hold skills, each a directory of Agent Skills directories: the
//! user's (`skills.dir`, by default `~/.local/share/code-executor-mcp/skills`), where
//! `saveSkill` writes; the working directory's project (`.code-executor/skills`), read only
//! when the project is trusted (the rule of its `.code-executor.json` and `.mcp.json`); and
//! the directories of `skills.serve`. Directories are read when asked (skills are plain files,
//! edited by hand), bounded in count and size. Saving over a skill moves the previous one to
//! `.versions/<name>/<version>` first; entries starting with `.` are never skills.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::SkillError;
use super::skill::{
    CodeSkill, META_INPUT_SCHEMA, META_LANGUAGE, META_OWNER, META_SCRIPT, META_TOOLS, META_VERSION,
    Origin, SKILL_FILE, Skill, SkillLanguage, ToolHashes, ToolSchemas, check_name, yaml_string,
};

/// The project's skills, under the working directory.
pub(crate) const PROJECT_SKILLS: &str = ".code-executor/skills";
/// Where previous versions go, inside the user's directory.
const VERSIONS: &str = ".versions";
/// The file that keeps the schemas of the tools a skill calls, as they were when it was saved.
pub(crate) const TOOLS_FILE: &str = "tools.json";
/// Most skills read from one directory.
const MAX_SKILLS_PER_DIR: usize = 1000;
/// Longest description (Agent Skills).
const MAX_DESCRIPTION: usize = 1024;
/// Previous versions kept of one skill (the oldest go first).
const MAX_VERSIONS: usize = 20;
/// Largest script saved.
pub(crate) const MAX_SCRIPT_BYTES: usize = 512 * 1024;

/// `skills` in the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkillSettings {
    /// The user's skills directory (saved skills go here).
    pub dir: Option<PathBuf>,
    /// More directories of Agent Skills to serve and search (read only).
    #[serde(default)]
    pub serve: Vec<PathBuf>,
    /// Whether code may save skills (`saveSkill`); default true.
    pub save: Option<bool>,
}

/// The default user directory: `$XDG_DATA_HOME/code-executor-mcp/skills`, else under
/// `~/.local/share`.
pub(crate) fn default_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .map(|d| d.join("code-executor-mcp/skills"))
}

/// `~/x` as `$HOME/x`; any other path as it is.
fn home(p: &Path) -> PathBuf {
    match (p.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(h)) => PathBuf::from(h).join(rest),
        _ => p.to_path_buf(),
    }
}

/// The skills this server knows, by where they live.
#[derive(Debug)]
pub(crate) struct Skills {
    user: Option<PathBuf>,
    /// The project's directory, when the project is trusted.
    project: Option<PathBuf>,
    /// Why the project's skills are not read, when it has some.
    pub(crate) project_held_back: Option<String>,
    served: Vec<PathBuf>,
    save: bool,
    saving: std::sync::Mutex<()>,
    /// The skills as search documents, last built, and when.
    docs: std::sync::Mutex<Docs>,
}

/// Search documents kept for [`DOCS_FRESH`]: a loop of searches reads no directory and asks
/// no upstream (it once held 18 MiB more of a flood's answers in flight).
#[derive(Debug, Default)]
struct Docs {
    built: Option<std::time::Instant>,
    docs: std::sync::Arc<Vec<rmcp::model::Tool>>,
}

/// How long search documents are reused: a hand edit or an upstream's new skill shows within
/// it; a save here shows at once.
const DOCS_FRESH: std::time::Duration = std::time::Duration::from_secs(2);

/// What `saveSkill` asks for.
#[derive(Debug, Clone)]
pub(crate) struct SaveRequest {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) code: String,
    pub(crate) language: SkillLanguage,
    pub(crate) input_schema: Option<Value>,
    /// The schemas of the tools the code calls.
    pub(crate) tools: ToolSchemas,
    /// The authenticated principal saving it (`token:alice`), or `None` (stdio, loopback).
    pub(crate) owner: Option<String>,
}

impl Skills {
    /// `project_dir` is the working directory's `.code-executor/skills`; `trusted` says
    /// whether the project is, and if not, why (with how to trust it).
    pub(crate) fn new(
        settings: &SkillSettings,
        project_dir: Option<PathBuf>,
        trusted: Result<(), String>,
    ) -> Skills {
        let project_dir = project_dir.filter(|d| d.is_dir());
        let (project, project_held_back) = match (project_dir, trusted) {
            (None, _) => (None, None),
            (Some(d), Ok(())) => (Some(d), None),
            (Some(d), Err(why)) => (
                None,
                Some(format!(
                    "the project's skills in {} are not read: {why}",
                    d.display()
                )),
            ),
        };
        Skills {
            user: settings.dir.as_deref().map(home).or_else(default_dir),
            project,
            project_held_back,
            served: settings.serve.iter().map(|d| home(d)).collect(),
            save: settings.save.unwrap_or(true),
            saving: std::sync::Mutex::new(()),
            docs: std::sync::Mutex::default(),
        }
    }

    /// Every directory of skills, in order of precedence.
    fn roots(&self) -> Vec<(PathBuf, Origin)> {
        let mut out = Vec::new();
        if let Some(u) = &self.user {
            out.push((u.clone(), Origin::User));
        }
        if let Some(p) = &self.project {
            out.push((p.clone(), Origin::Project));
        }
        out.extend(self.served.iter().map(|d| (d.clone(), Origin::Served)));
        out
    }

    /// Every skill, and the problems met reading them (a broken skill is skipped, said).
    pub(crate) fn list(&self) -> (Vec<Skill>, Vec<String>) {
        let (mut skills, mut problems) = (Vec::new(), Vec::new());
        for (root, origin) in self.roots() {
            let entries = match std::fs::read_dir(&root) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    problems.push(format!("{}: {e}", root.display()));
                    continue;
                }
            };
            let mut dirs: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                // A symlink is not followed: a skill's files stay under its root.
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .filter(|p| p.join(SKILL_FILE).is_file())
                .collect();
            dirs.sort();
            if dirs.len() > MAX_SKILLS_PER_DIR {
                problems.push(format!(
                    "{} holds {} skills; only the first {MAX_SKILLS_PER_DIR} are read",
                    root.display(),
                    dirs.len()
                ));
                dirs.truncate(MAX_SKILLS_PER_DIR);
            }
            for dir in dirs {
                match Skill::read(&dir, origin.clone()) {
                    Ok(s) => skills.push(s),
                    Err(e) => problems.push(e.to_string()),
                }
            }
        }
        (skills, problems)
    }

    /// The skill `name` names: a bare name, or `origin/name` (`user/`, `project/`, `served/`)
    /// when more than one has it. The identifier form (`weekly_report` for `weekly-report`)
    /// is accepted too.
    pub(crate) fn find(&self, name: &str) -> Result<Skill, SkillError> {
        let (origin, bare) = match name.split_once('/') {
            Some((o, n)) => (Some(o), n),
            None => (None, name),
        };
        let wanted = bare.replace('_', "-");
        // Its directory in each root (a name is its directory's): no listing, no other
        // skill read. A name that breaks the rules names no directory.
        let matching: Vec<Skill> = if check_name(&wanted).is_err() {
            Vec::new()
        } else {
            self.roots()
                .into_iter()
                .filter(|(_, o)| origin.is_none_or(|want| o.as_str() == want))
                .filter_map(|(root, o)| {
                    let dir = root.join(&wanted);
                    // Not a symlink, as in `list`.
                    let is_dir = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
                    is_dir.then(|| Skill::read(&dir, o).ok()).flatten()
                })
                .collect()
        };
        match matching.len() {
            0 => Err(SkillError::NotFound {
                name: name.to_string(),
                hint: self
                    .project_held_back
                    .as_ref()
                    .map(|why| format!(" ({why})"))
                    .unwrap_or_default(),
            }),
            1 => Ok(matching
                .into_iter()
                .next()
                .unwrap_or_else(|| unreachable!())),
            _ => Err(SkillError::Ambiguous {
                name: wanted,
                origins: matching
                    .iter()
                    .map(|s| s.origin.as_str().to_string())
                    .collect(),
            }),
        }
    }

    /// Saves a skill in the user's directory, the previous one with that name kept as a
    /// version. Returns the saved skill.
    pub(crate) fn save(&self, req: SaveRequest) -> Result<Skill, SkillError> {
        if !self.save {
            return Err(SkillError::SaveOff);
        }
        let root = self.user.as_ref().ok_or(SkillError::NoDirectory)?;
        check_name(&req.name)?;
        let description = req.description.trim();
        if description.is_empty() || description.chars().count() > MAX_DESCRIPTION {
            return Err(SkillError::Invalid(format!(
                "a skill's description says what it does and when to use it, in 1 to \
                 {MAX_DESCRIPTION} characters (this one has {})",
                description.chars().count()
            )));
        }
        if req.code.trim().is_empty() || req.code.len() > MAX_SCRIPT_BYTES {
            return Err(SkillError::Invalid(format!(
                "a skill's code is 1 to {MAX_SCRIPT_BYTES} bytes (this one has {})",
                req.code.len()
            )));
        }
        if let Some(schema) = &req.input_schema
            && schema.get("type").and_then(Value::as_str) != Some("object")
        {
            return Err(SkillError::Invalid(
                "inputSchema must be a JSON Schema of an object ({\"type\": \"object\", \
                 \"properties\": {...}}): a skill is called with named arguments"
                    .into(),
            ));
        }
        let _one_at_a_time = self.saving.lock().unwrap_or_else(|p| p.into_inner());
        std::fs::create_dir_all(root).map_err(|e| SkillError::io(root, e))?;
        let target = root.join(&req.name);
        let previous = match Skill::read(&target, Origin::User) {
            Ok(s) => {
                // One principal cannot change the code another runs under its own rights.
                let owner = s.code.as_ref().and_then(|c| c.owner.clone());
                if owner != req.owner {
                    return Err(SkillError::Invalid(format!(
                        "skill {:?} was saved by {}; {} cannot save over it: save under \
                         another name",
                        req.name,
                        owner
                            .as_deref()
                            .unwrap_or("a local client (not authenticated)"),
                        req.owner.as_deref().unwrap_or("a local client")
                    )));
                }
                Some(s.code.as_ref().map_or(1, |c| c.version))
            }
            Err(_) if target.exists() => Some(0),
            Err(_) => None,
        };
        let version = previous.map_or(1, |v| v.max(1) + 1);
        if previous.is_none() {
            let count = std::fs::read_dir(root)
                .map(|d| {
                    d.filter_map(Result::ok)
                        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                        .count()
                })
                .unwrap_or(0);
            if count >= MAX_SKILLS_PER_DIR {
                return Err(SkillError::Invalid(format!(
                    "the skills directory {} holds {count} skills, the most it keeps; delete \
                     some (or save over one) first",
                    root.display()
                )));
            }
        }
        // Written aside, then swapped in: a reader never sees half a skill.
        let staging = root.join(format!(".saving-{}-{}", req.name, std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging).map_err(|e| SkillError::io(&staging, e))?;
        let written = write_skill(&staging, &req, version);
        if let Err(e) = written {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
        if previous.is_some() {
            let versions = root.join(VERSIONS).join(&req.name);
            std::fs::create_dir_all(&versions).map_err(|e| SkillError::io(&versions, e))?;
            let mut n = previous.unwrap_or(0).max(1);
            while versions.join(n.to_string()).exists() {
                n += 1;
            }
            let kept = versions.join(n.to_string());
            std::fs::rename(&target, &kept).map_err(|e| SkillError::io(&target, e))?;
            // A bounded history: a loop of saves cannot fill the disk with versions.
            let all = self.versions(&req.name);
            for old in all.iter().take(all.len().saturating_sub(MAX_VERSIONS)) {
                let _ = std::fs::remove_dir_all(versions.join(old.to_string()));
            }
        }
        std::fs::rename(&staging, &target).map_err(|e| SkillError::io(&target, e))?;
        // The next search sees it.
        self.docs.lock().unwrap_or_else(|p| p.into_inner()).built = None;
        Skill::read(&target, Origin::User)
    }

    /// The search documents built less than [`DOCS_FRESH`] ago, if any.
    pub(crate) fn fresh_docs(&self) -> Option<std::sync::Arc<Vec<rmcp::model::Tool>>> {
        let last = self.docs.lock().unwrap_or_else(|p| p.into_inner());
        last.built
            .is_some_and(|at| at.elapsed() < DOCS_FRESH)
            .then(|| last.docs.clone())
    }

    /// `docs` as the same `Arc` as last time when they are equal (the catalog keeps its
    /// search index while the `Arc` is the same), kept as fresh.
    pub(crate) fn same_docs(
        &self,
        docs: Vec<rmcp::model::Tool>,
    ) -> std::sync::Arc<Vec<rmcp::model::Tool>> {
        let mut last = self.docs.lock().unwrap_or_else(|p| p.into_inner());
        if *last.docs != docs {
            last.docs = std::sync::Arc::new(docs);
        }
        last.built = Some(std::time::Instant::now());
        last.docs.clone()
    }

    /// The versions kept of a user skill, oldest first.
    pub(crate) fn versions(&self, name: &str) -> Vec<u32> {
        let Some(root) = &self.user else {
            return Vec::new();
        };
        let mut out: Vec<u32> = std::fs::read_dir(root.join(VERSIONS).join(name))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        out.sort_unstable();
        out
    }
}

/// Writes `SKILL.md`, the script and the tools' schemas into `dir`.
fn write_skill(dir: &Path, req: &SaveRequest, version: u32) -> Result<(), SkillError> {
    let script = req.language.script_file();
    let hashes: ToolHashes = req
        .tools
        .iter()
        .map(|(server, tools)| {
            let tools = tools
                .iter()
                .map(|(t, s)| (t.clone(), schema_hash(s)))
                .collect();
            (server.clone(), tools)
        })
        .collect();
    let mut md = format!(
        "---\nname: {}\ndescription: {}\nmetadata:\n",
        yaml_string(&req.name),
        yaml_string(req.description.trim())
    );
    let mut meta = |k: &str, v: String| {
        md.push_str(&format!("  {}: {}\n", yaml_string(k), yaml_string(&v)));
    };
    meta(META_LANGUAGE, req.language.as_str().to_string());
    meta(META_SCRIPT, script.to_string());
    meta(META_VERSION, version.to_string());
    if let Some(owner) = &req.owner {
        meta(META_OWNER, owner.clone());
    }
    if let Some(schema) = &req.input_schema {
        meta(META_INPUT_SCHEMA, schema.to_string());
    }
    if !hashes.is_empty() {
        meta(META_TOOLS, json!(hashes).to_string());
    }
    let ident = worker_protocol::ident(&req.name);
    md.push_str(&format!(
        "---\n\n# {name}\n\n{description}\n\nSaved code of code-executor-mcp, in {language}: \
         [{script}]({script}). Call it from code in either language: `await skills.{ident}(args)` \
         (TypeScript) or `skills.{ident}(**args)` (Python); it runs as an execution of its own, \
         with the caller's allowed tools, limits and permissions.\n",
        name = req.name,
        description = req.description.trim(),
        language = req.language.as_str(),
    ));
    if let Some(schema) = &req.input_schema {
        let pretty = serde_json::to_string_pretty(schema).unwrap_or_default();
        md.push_str(&format!(
            "\nArguments (JSON Schema):\n\n```json\n{pretty}\n```\n"
        ));
    }
    if !req.tools.is_empty() {
        md.push_str(&format!(
            "\nUpstream tools it calls: {}. Their schemas when it was saved are in \
             [{TOOLS_FILE}]({TOOLS_FILE}).\n",
            req.tools
                .iter()
                .flat_map(|(s, tools)| tools.keys().map(move |t| format!("`{s}.{t}`")))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| SkillError::io(&path, e))
    };
    write(SKILL_FILE, &md)?;
    write(script, &req.code)?;
    if !req.tools.is_empty() {
        write(
            TOOLS_FILE,
            &serde_json::to_string_pretty(&req.tools).unwrap_or_default(),
        )?;
    }
    Ok(())
}

/// `sha256:<hex>` of a tool's schemas as canonical JSON (object keys sorted).
pub(crate) fn schema_hash(schemas: &Value) -> String {
    use sha2::Digest;
    let canonical = canonical(schemas).to_string();
    let digest = sha2::Sha256::digest(canonical.as_bytes());
    format!("sha256:{}", hex(&digest))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `v` with every object's keys in order, so equal schemas hash equal.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            let mut out = serde_json::Map::new();
            for (k, v) in sorted {
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        _ => v.clone(),
    }
}

impl CodeSkill {
    /// The schemas kept in the skill's `tools.json`, if any.
    pub(crate) fn saved_schemas(dir: &Path) -> ToolSchemas {
        std::fs::read_to_string(dir.join(TOOLS_FILE))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path) -> Skills {
        Skills::new(
            &SkillSettings {
                dir: Some(dir.join("user")),
                ..Default::default()
            },
            None,
            Ok(()),
        )
    }

    fn request(name: &str, code: &str) -> SaveRequest {
        SaveRequest {
            name: name.into(),
            description: "Adds two numbers.".into(),
            code: code.into(),
            language: SkillLanguage::TypeScript,
            input_schema: Some(json!({"type": "object", "properties": {"a": {"type": "number"}}})),
            tools: BTreeMap::from([(
                "fx".to_string(),
                BTreeMap::from([(
                    "echo".to_string(),
                    json!({"inputSchema": {"type": "object"}}),
                )]),
            )]),
            owner: None,
        }
    }

    #[test]
    fn saving_over_a_skill_keeps_the_previous_version() {
        let tmp = tempdir();
        let skills = store(&tmp);
        let first = skills.save(request("add", "return args.a + 1")).unwrap();
        assert_eq!(first.code.as_ref().unwrap().version, 1);
        let second = skills.save(request("add", "return args.a + 2")).unwrap();
        assert_eq!(second.code.as_ref().unwrap().version, 2);
        assert_eq!(
            second.script_source().unwrap().unwrap().1,
            "return args.a + 2"
        );
        assert_eq!(skills.versions("add"), vec![1]);
        let kept = tmp.join("user/.versions/add/1/skill.ts");
        assert_eq!(std::fs::read_to_string(kept).unwrap(), "return args.a + 1");
        let (all, problems) = skills.list();
        assert_eq!(all.len(), 1, "{problems:?}");
        let code = all[0].code.as_ref().unwrap();
        assert_eq!(
            code.tools["fx"]["echo"],
            schema_hash(&json!({"inputSchema": {"type": "object"}}))
        );
        assert_eq!(
            code.input_schema.as_ref().unwrap()["properties"]["a"]["type"],
            "number"
        );
        // Found by its identifier form too.
        assert_eq!(skills.find("add").unwrap().name, "add");
        assert!(matches!(
            skills.find("nope"),
            Err(SkillError::NotFound { .. })
        ));
    }

    #[test]
    fn only_its_owner_saves_over_an_owned_skill() {
        let tmp = tempdir();
        let skills = store(&tmp);
        let mut alice = request("report", "return 1");
        alice.owner = Some("token:alice".into());
        skills.save(alice.clone()).unwrap();
        for other in [
            Some("token:bob".to_string()),
            Some("oauth:alice".into()),
            None,
        ] {
            let mut r = request("report", "return 'evil'");
            r.owner = other.clone();
            let e = skills.save(r).unwrap_err().to_string();
            assert!(e.contains("was saved by token:alice"), "{other:?}: {e}");
        }
        skills.save(alice).unwrap();
        assert_eq!(skills.find("report").unwrap().code.unwrap().version, 2);
        // A local (unauthenticated) skill is not taken over by a principal either.
        skills.save(request("local", "return 1")).unwrap();
        let mut bob = request("local", "return 2");
        bob.owner = Some("token:bob".into());
        assert!(skills.save(bob).is_err());
    }

    #[test]
    fn the_history_is_bounded() {
        let tmp = tempdir();
        let skills = store(&tmp);
        for i in 0..(MAX_VERSIONS + 5) {
            skills
                .save(request("loop", &format!("return {i}")))
                .unwrap();
        }
        let kept = skills.versions("loop");
        assert_eq!(kept.len(), MAX_VERSIONS, "{kept:?}");
        assert_eq!(kept.first(), Some(&5));
        assert_eq!(
            skills.find("loop").unwrap().code.unwrap().version as usize,
            MAX_VERSIONS + 5
        );
    }

    #[test]
    fn bad_saves_say_what_to_fix_and_write_nothing() {
        let tmp = tempdir();
        let skills = store(&tmp);
        let mut r = request("Bad Name", "1");
        assert!(
            skills
                .save(r.clone())
                .unwrap_err()
                .to_string()
                .contains("Agent Skills rules")
        );
        r.name = "ok".into();
        r.description = " ".into();
        assert!(
            skills
                .save(r.clone())
                .unwrap_err()
                .to_string()
                .contains("description")
        );
        r.description = "d".into();
        r.input_schema = Some(json!({"type": "string"}));
        assert!(
            skills
                .save(r)
                .unwrap_err()
                .to_string()
                .contains("inputSchema")
        );
        assert!(skills.list().0.is_empty());
    }

    #[test]
    fn hand_written_and_broken_skills() {
        let tmp = tempdir();
        let skills = store(&tmp);
        let user = tmp.join("user");
        let write = |dir: &str, text: &str| {
            std::fs::create_dir_all(user.join(dir)).unwrap();
            std::fs::write(user.join(dir).join(SKILL_FILE), text).unwrap();
        };
        write(
            "notes",
            "---\nname: notes\ndescription: How we write notes.\n---\nBody\n",
        );
        write("wrong-dir", "---\nname: other\ndescription: d\n---\n");
        write("broken", "no frontmatter");
        let (all, problems) = skills.list();
        assert_eq!(
            all.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["notes"]
        );
        assert!(all[0].code.is_none());
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    #[test]
    fn the_same_name_in_two_places_must_be_told_apart() {
        let tmp = tempdir();
        let project = tmp.join("project");
        std::fs::create_dir_all(project.join("dup")).unwrap();
        std::fs::write(
            project.join("dup").join(SKILL_FILE),
            "---\nname: dup\ndescription: project one\n---\n",
        )
        .unwrap();
        let settings = SkillSettings {
            dir: Some(tmp.join("user")),
            ..Default::default()
        };
        let skills = Skills::new(&settings, Some(project.clone()), Ok(()));
        skills.save(request("dup", "return 1")).unwrap();
        let e = skills.find("dup").unwrap_err().to_string();
        assert!(e.contains("\"user/dup\" or \"project/dup\""), "{e}");
        assert_eq!(
            skills.find("project/dup").unwrap().description,
            "project one"
        );
        // An untrusted project's skills are not read, and a miss says why.
        let held = Skills::new(&settings, Some(project), Err("not trusted".into()));
        let e = held.find("project/dup").unwrap_err().to_string();
        assert!(e.contains("not trusted"), "{e}");
    }

    fn tempdir() -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("cem-skills-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
