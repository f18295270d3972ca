//! Where skills live and how they are listed, found and saved.
//!
//! Three kinds of directory hold skills, each a directory of Agent Skills directories: the
//! user's (`skills.dir`, by default `~/.local/share/code-executor-mcp/skills`), where
//! `saveSkill` writes; the working directory's project (`.code-executor/skills`), read only
//! when the project is trusted (the rule of its `.code-executor.json` and `.mcp.json`); and
//! the directories of `skills.serve`. Directories are read when asked (skills are plain files,
//! edited by hand), bounded in count and size. Saving over a skill moves the previous one to
//! `.versions/<name>/<version>` first; entries starting with `.` are never skills.
//!
//! Every directory is untrusted: it is read beneath its root by descriptor, no link followed
//! at any component ([`super::beneath`]); one odd entry is reported alone and the rest listed;
//! a skill whose owner cannot be told is saved over by nobody; every saved field, each
//! owner's skills (count and bytes, kept versions counted) and the directory as a whole are
//! bounded (the constants below say by how much and why).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::beneath::{Dir, Kind, Root, TreeError};
use super::error::SkillError;
pub use super::request::{SaveRequest, TOOLS_FILE, hex, schema_hash};
use super::request::{render_version, skill_md};
use super::skill::{CodeSkill, MAX_SKILL_FILE, Origin, SKILL_FILE, Skill, ToolSchemas, check_name};

/// The project's skills, under the working directory.
pub const PROJECT_SKILLS: &str = ".code-executor/skills";
/// Where previous versions go, inside the user's directory.
const VERSIONS: &str = ".versions";
/// Most skills read from one directory (and held by the user's directory in all).
const MAX_SKILLS_PER_DIR: usize = 1000;
/// Most entries of one skills directory looked at: a directory of a million names costs
/// one bounded read, not a million.
const MAX_ENTRIES_READ: usize = 4 * MAX_SKILLS_PER_DIR;
/// Longest description, in characters (Agent Skills).
pub const MAX_DESCRIPTION: usize = 1024;
/// Previous versions kept of one skill (the oldest go first).
const MAX_VERSIONS: usize = 20;
/// Largest script saved: far more than any task's code (the execute tools take 1 MiB), and
/// with [`MAX_VERSIONS`] kept, bounded per skill.
pub const MAX_SCRIPT_BYTES: usize = 512 * 1024;
/// Largest input schema saved, as compact JSON. It is written into `SKILL.md` twice (as a
/// JSON string in the frontmatter, and pretty-printed for the reader), which must stay under
/// `MAX_SKILL_FILE` to read back; 64 KiB is a schema of hundreds of arguments.
pub const MAX_INPUT_SCHEMA_BYTES: usize = 64 * 1024;
/// Longest owner recorded (an authenticated principal's display form).
const MAX_OWNER: usize = 256;
/// Most upstream tools a skill records (each one's hash goes into its frontmatter).
pub const MAX_TOOLS_RECORDED: usize = 128;
/// Largest `tools.json` (the recorded schemas of those tools) written or read. The schemas
/// are the upstreams', not the saver's: past this they are not kept (changes are then told
/// by hash only), the save is not refused.
pub const MAX_TOOLS_FILE: u64 = 1 << 20;
/// Most skills one owner (an authenticated principal, or the local clients together) keeps
/// in the user's directory.
pub const MAX_SKILLS_PER_OWNER: usize = 200;
/// Most bytes one owner's skills take in the user's directory, every kept version counted:
/// a loop of saves cannot fill the disk (without it, 1,000 skills of 21 versions of 8 MiB).
pub const MAX_BYTES_PER_OWNER: u64 = 64 << 20;
/// Most bytes the user's directory takes in all, whoever saved.
pub const MAX_STORE_BYTES: u64 = 1 << 30;
/// The bounds of the user's directory per owner and in all (the constants above; smaller in
/// tests).
#[derive(Debug, Clone, Copy)]
struct Room {
    skills_per_owner: usize,
    bytes_per_owner: u64,
    store_bytes: u64,
}

impl Default for Room {
    fn default() -> Room {
        Room {
            skills_per_owner: MAX_SKILLS_PER_OWNER,
            bytes_per_owner: MAX_BYTES_PER_OWNER,
            store_bytes: MAX_STORE_BYTES,
        }
    }
}

/// How deep a skill's directories are walked when its bytes are counted.
const MAX_DEPTH_COUNTED: usize = 16;
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
pub fn default_dir() -> Option<PathBuf> {
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
pub struct Skills {
    user: Option<PathBuf>,
    /// The project's directory, when the project is trusted.
    project: Option<Root>,
    /// Why the project's skills are not read, when it has some.
    pub project_held_back: Option<String>,
    served: Vec<PathBuf>,
    save: bool,
    saving: std::sync::Mutex<()>,
    /// The skills as search documents, last built, and when.
    docs: std::sync::Mutex<Docs>,
    /// The problems already logged.
    warned: std::sync::Mutex<HashSet<String>>,
    room: Room,
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

impl Skills {
    /// `project_dir` is the working directory's `.code-executor/skills`; `trusted` says
    /// whether the project is, and if not, why (with how to trust it).
    pub fn new(
        settings: &SkillSettings,
        project_dir: Option<PathBuf>,
        trusted: Result<(), &dyn std::fmt::Display>,
    ) -> Skills {
        // Anything there (a link too: it is refused when read, and said).
        let project_dir = project_dir.filter(|d| std::fs::symlink_metadata(d).is_ok());
        let (project, project_held_back) = match (project_dir, trusted) {
            (None, _) => (None, None),
            (Some(d), Ok(())) => (Some(project_root(d)), None),
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
            warned: std::sync::Mutex::default(),
            room: Room::default(),
        }
    }

    /// Every directory of skills, in order of precedence.
    fn roots(&self) -> Vec<(Root, Origin)> {
        let mut out = Vec::new();
        if let Some(u) = &self.user {
            out.push((Root::configured(u.clone()), Origin::User));
        }
        if let Some(p) = &self.project {
            out.push((p.clone(), Origin::Project));
        }
        out.extend(
            self.served
                .iter()
                .map(|d| (Root::configured(d.clone()), Origin::Served)),
        );
        out
    }

    /// Every skill, and the problems met reading them: each odd entry (a link, a fifo, a
    /// file where a skill directory belongs, a name that is not UTF-8, a `SKILL.md` that is
    /// missing, a directory, too large or unparsable...) is skipped and said, alone; the
    /// others are listed. Each problem is logged once.
    pub fn list(&self) -> (Vec<Skill>, Vec<String>) {
        let (mut skills, mut problems) = (Vec::new(), Vec::new());
        for (root, origin) in self.roots() {
            let dir = match root.open() {
                Ok(d) => d,
                Err(TreeError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    continue;
                }
                Err(e) => {
                    problems.push(e.to_string());
                    continue;
                }
            };
            let (entries, more) = match dir.entries(MAX_ENTRIES_READ) {
                Ok(e) => e,
                Err(e) => {
                    problems.push(e.to_string());
                    continue;
                }
            };
            if more {
                problems.push(format!(
                    "{} holds more than {MAX_ENTRIES_READ} entries; only {MAX_ENTRIES_READ} \
                     are looked at",
                    dir.path().display()
                ));
            }
            let mut read = 0;
            for entry in entries {
                let name = match entry.name {
                    Ok(n) if n.starts_with('.') => continue,
                    Ok(n) => n,
                    Err(super::beneath::NotUtf8Name(lossy)) => {
                        problems.push(format!(
                            "{}: the name {lossy:?} is not UTF-8, so not a skill's; skipped",
                            dir.path().display()
                        ));
                        continue;
                    }
                };
                let path = dir.path().join(&name);
                match entry.kind {
                    Ok(Kind::Dir) => {}
                    Ok(Kind::Link) => {
                        problems.push(
                            TreeError::Link {
                                path: path.display().to_string(),
                            }
                            .to_string(),
                        );
                        continue;
                    }
                    Ok(other) => {
                        let what = match other {
                            Kind::Other(what) => what,
                            _ => "a file",
                        };
                        problems.push(format!(
                            "{} is {what}, not a skill's directory; skipped",
                            path.display()
                        ));
                        continue;
                    }
                    Err(e) => {
                        problems.push(e.to_string());
                        continue;
                    }
                }
                if read == MAX_SKILLS_PER_DIR {
                    problems.push(format!(
                        "{} holds more than {MAX_SKILLS_PER_DIR} skills; only the first \
                         {MAX_SKILLS_PER_DIR} are read",
                        dir.path().display()
                    ));
                    break;
                }
                read += 1;
                match Skill::read_in(&dir, &root, &name, origin.clone()) {
                    Ok(Some(s)) => skills.push(s),
                    // Gone since it was listed.
                    Ok(None) => {}
                    Err(e) => problems.push(e.to_string()),
                }
            }
        }
        self.warn_once(&problems);
        (skills, problems)
    }

    /// Logs each problem the first time it is met (listings are frequent).
    fn warn_once(&self, problems: &[String]) {
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        for p in problems {
            // Bounded: a directory whose problems keep changing cannot grow it for ever.
            if warned.len() < 4 * MAX_ENTRIES_READ && warned.insert(p.clone()) {
                tracing::warn!("skills: {p}");
            }
        }
    }

    /// The skill `name` names: a bare name, or `origin/name` (`user/`, `project/`, `served/`)
    /// when more than one has it. The identifier form (`weekly_report` for `weekly-report`)
    /// is accepted too. A skill of that name that cannot be read (a link, a broken
    /// `SKILL.md`) is an error, never passed over for another.
    pub fn find(&self, name: &str) -> Result<Skill, SkillError> {
        let (origin, bare) = match name.split_once('/') {
            Some((o, n)) => (Some(o), n),
            None => (None, name),
        };
        let wanted = bare.replace('_', "-");
        // Its directory in each root (a name is its directory's): no listing, no other
        // skill read. A name that breaks the rules names no directory.
        let mut matching: Vec<Skill> = Vec::new();
        if check_name(&wanted).is_ok() {
            for (root, o) in self.roots() {
                if origin.is_some_and(|want| o.as_str() != want) {
                    continue;
                }
                // A directory that cannot be opened holds no skill we can read (`list` says
                // why); it does not stop the others' skills from being called.
                let Ok(dir) = root.open() else {
                    continue;
                };
                if let Some(s) = Skill::read_in(&dir, &root, &wanted, o)? {
                    matching.push(s);
                }
            }
        }
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
    pub fn save(&self, req: SaveRequest) -> Result<Skill, SkillError> {
        if !self.save {
            return Err(SkillError::SaveOff);
        }
        let user = self.user.as_ref().ok_or(SkillError::NoDirectory)?;
        let files = check_request(&req)?;
        let new_bytes: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
        let _one_at_a_time = self.saving.lock().unwrap_or_else(|p| p.into_inner());
        std::fs::create_dir_all(user).map_err(|e| SkillError::io(user, e))?;
        let root = Root::configured(user.clone());
        let dir = root.open()?;
        // Whose it is: a skill there whose owner cannot be told (its SKILL.md a link, too
        // large, unparsable, missing) is refused, never saved over.
        let previous = match Skill::read_in(&dir, &root, &req.name, Origin::User) {
            Ok(None) => None,
            Ok(Some(s)) => {
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
            Err(e) => {
                return Err(SkillError::Invalid(format!(
                    "skill {:?} is there but cannot be read ({e}), so whose it is cannot be \
                     told: nobody may save over it. Fix or remove {} by hand, or save under \
                     another name",
                    req.name,
                    dir.path().join(&req.name).display()
                )));
            }
        };
        self.check_room(&dir, &req, previous.is_some(), new_bytes)?;
        let version = previous.map_or(1, |v| v.max(1) + 1);
        // Written aside, then swapped in: a reader never sees half a skill.
        let staging = format!(".saving-{}-{}", req.name, std::process::id());
        dir.remove_tree(&staging)?;
        let written = dir
            .make_dir(&staging)
            .and_then(|s| {
                for (name, bytes) in &files {
                    let bytes = if *name == SKILL_FILE {
                        render_version(bytes, version)
                    } else {
                        bytes.clone()
                    };
                    s.write_new(name, &bytes)?;
                }
                Ok(())
            })
            .map_err(SkillError::from);
        if let Err(e) = written {
            let _ = dir.remove_tree(&staging);
            return Err(e);
        }
        if let Some(previous) = previous {
            let kept = dir
                .make_dir(VERSIONS)
                .and_then(|v| v.make_dir(&req.name))
                .and_then(|versions| {
                    let mut n = previous.max(1);
                    while fstat_exists(&versions, &n.to_string()) {
                        n += 1;
                    }
                    dir.rename(&req.name, &versions, &n.to_string())?;
                    Ok(versions)
                });
            let versions = match kept {
                Ok(v) => v,
                Err(e) => {
                    let _ = dir.remove_tree(&staging);
                    return Err(e.into());
                }
            };
            // A bounded history: a loop of saves cannot fill the disk with versions.
            let all = self.versions(&req.name);
            for old in all.iter().take(all.len().saturating_sub(MAX_VERSIONS)) {
                let _ = versions.remove_tree(&old.to_string());
            }
        }
        dir.rename(&staging, &dir, &req.name)?;
        // The next search sees it.
        self.docs.lock().unwrap_or_else(|p| p.into_inner()).built = None;
        Skill::read_in(&dir, &root, &req.name, Origin::User)?.ok_or_else(|| SkillError::NotFound {
            name: req.name.clone(),
            hint: String::new(),
        })
    }

    /// Whether the user's directory (`dir`) has room for `new_bytes` more of `req.owner`'s
    /// (a new skill when `!over`): its count and bytes, every kept version counted, and the
    /// directory's bytes in all.
    fn check_room(
        &self,
        dir: &Dir,
        req: &SaveRequest,
        over: bool,
        new_bytes: u64,
    ) -> Result<(), SkillError> {
        let (entries, more) = dir.entries(MAX_ENTRIES_READ)?;
        if more {
            // What is not looked at cannot be counted: no room can be told.
            return Err(SkillError::Invalid(format!(
                "the skills directory {} holds more than {MAX_ENTRIES_READ} entries, so what it \
                 holds cannot be counted; have some removed first",
                dir.path().display()
            )));
        }
        let root = Root::configured(dir.path().to_path_buf());
        let versions = dir.dir(VERSIONS).ok();
        let (mut skills, mut mine, mut my_bytes, mut all_bytes) = (0usize, 0usize, 0u64, 0u64);
        for e in entries {
            let Ok(name) = e.name else { continue };
            if name.starts_with('.') || e.kind.ok() != Some(Kind::Dir) {
                continue;
            }
            skills += 1;
            let Ok(skill_dir) = dir.dir(&name) else {
                continue;
            };
            let mut bytes = skill_dir.bytes(MAX_DEPTH_COUNTED, MAX_ENTRIES_READ);
            if let Some(kept) = versions.as_ref().and_then(|v| v.dir(&name).ok()) {
                // The oldest version goes when this save adds one past the bound.
                let all = self.versions(&name);
                let dropped = if over && name == req.name && all.len() >= MAX_VERSIONS {
                    all.first()
                        .and_then(|v| kept.dir(&v.to_string()).ok())
                        .map_or(0, |d| d.bytes(MAX_DEPTH_COUNTED, MAX_ENTRIES_READ))
                } else {
                    0
                };
                bytes += kept
                    .bytes(MAX_DEPTH_COUNTED + 1, MAX_ENTRIES_READ)
                    .saturating_sub(dropped);
            }
            all_bytes = all_bytes.saturating_add(bytes);
            // Whose: a skill that cannot be read counts for nobody here (nobody may save
            // over it either).
            let owner = Skill::read_in(dir, &root, &name, Origin::User)
                .ok()
                .flatten()
                .map(|s| s.code.and_then(|c| c.owner));
            if owner.as_ref() == Some(&req.owner) {
                mine += 1;
                my_bytes = my_bytes.saturating_add(bytes);
            }
        }
        let who = req.owner.as_deref().unwrap_or("the local clients");
        if !over && skills >= MAX_SKILLS_PER_DIR {
            return Err(SkillError::Invalid(format!(
                "the skills directory {} holds {skills} skills, the most it keeps; delete some \
                 (or save over one) first",
                dir.path().display()
            )));
        }
        let room = self.room;
        if !over && mine >= room.skills_per_owner {
            return Err(SkillError::Invalid(format!(
                "{who} already keeps {mine} skills, the most one owner may ({}); save over one \
                 of them, or have some removed",
                room.skills_per_owner
            )));
        }
        if my_bytes.saturating_add(new_bytes) > room.bytes_per_owner {
            return Err(SkillError::Invalid(format!(
                "{who}'s skills take {my_bytes} bytes with their kept versions; this save of \
                 {new_bytes} more would pass the {} bytes one owner may keep. Have old skills \
                 or versions (in {}) removed first",
                room.bytes_per_owner,
                dir.path().join(VERSIONS).display()
            )));
        }
        if all_bytes.saturating_add(new_bytes) > room.store_bytes {
            return Err(SkillError::Invalid(format!(
                "the skills directory {} takes {all_bytes} bytes; this save of {new_bytes} more \
                 would pass the {} bytes it may take. Have old skills or versions removed first",
                dir.path().display(),
                room.store_bytes
            )));
        }
        Ok(())
    }
    /// The search documents built less than [`DOCS_FRESH`] ago, if any.
    pub fn fresh_docs(&self) -> Option<std::sync::Arc<Vec<rmcp::model::Tool>>> {
        let last = self.docs.lock().unwrap_or_else(|p| p.into_inner());
        last.built
            .is_some_and(|at| at.elapsed() < DOCS_FRESH)
            .then(|| last.docs.clone())
    }

    /// `docs` as the same `Arc` as last time when they are equal (the catalog keeps its
    /// search index while the `Arc` is the same), kept as fresh.
    pub fn same_docs(
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
    pub fn versions(&self, name: &str) -> Vec<u32> {
        let Some(root) = &self.user else {
            return Vec::new();
        };
        let kept = Root::configured(root.clone())
            .open()
            .and_then(|d| d.dir(VERSIONS))
            .and_then(|d| d.dir(name))
            .and_then(|d| d.entries(MAX_ENTRIES_READ));
        let mut out: Vec<u32> = kept
            .map(|(entries, _)| {
                entries
                    .into_iter()
                    .filter(|e| e.kind.as_ref().is_ok_and(|k| *k == Kind::Dir))
                    .filter_map(|e| e.name.ok()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        out.sort_unstable();
        out
    }
}

/// The project's root: `.code-executor/skills` beneath the project, neither followed.
fn project_root(dir: PathBuf) -> Root {
    match dir.ancestors().nth(2) {
        Some(project) if dir.ends_with(PROJECT_SKILLS) => {
            Root::beneath(project.to_path_buf(), PROJECT_SKILLS)
        }
        _ => Root::configured(dir),
    }
}

fn fstat_exists(dir: &Dir, name: &str) -> bool {
    nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).is_ok()
}

/// Checks every field of `req` against its bound, and renders the files to write: `SKILL.md`
/// (with a version placeholder, see [`render_version`]), the script, and `tools.json` when
/// the tools' schemas fit. Each refusal names the field and its limit.
fn check_request(req: &SaveRequest) -> Result<Vec<(&'static str, Vec<u8>)>, SkillError> {
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
    if let Some(schema) = &req.input_schema {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(SkillError::Invalid(
                "inputSchema must be a JSON Schema of an object ({\"type\": \"object\", \
                 \"properties\": {...}}): a skill is called with named arguments"
                    .into(),
            ));
        }
        let len = schema.to_string().len();
        if len > MAX_INPUT_SCHEMA_BYTES {
            return Err(SkillError::Invalid(format!(
                "a skill's inputSchema is at most {MAX_INPUT_SCHEMA_BYTES} bytes as JSON (this \
                 one has {len}): describe the arguments, not every value they may take"
            )));
        }
    }
    if let Some(owner) = &req.owner
        && (owner.len() > MAX_OWNER || owner.chars().any(char::is_control))
    {
        return Err(SkillError::Invalid(format!(
            "the principal saving ({} bytes) is longer than the {MAX_OWNER} bytes recorded as \
             a skill's owner, or holds a control character",
            owner.len()
        )));
    }
    let recorded: usize = req.tools.values().map(BTreeMap::len).sum();
    if recorded > MAX_TOOLS_RECORDED {
        return Err(SkillError::Invalid(format!(
            "a skill's code names {recorded} upstream tools, more than the \
             {MAX_TOOLS_RECORDED} a skill records; split it into smaller skills"
        )));
    }
    let md = skill_md(req);
    let len = md.len() as u64 + 16;
    if len > MAX_SKILL_FILE {
        return Err(SkillError::Invalid(format!(
            "the skill's {SKILL_FILE} would be {len} bytes, more than the {MAX_SKILL_FILE} a \
             {SKILL_FILE} may have (its inputSchema is written there twice): make the \
             inputSchema smaller"
        )));
    }
    let mut files = vec![
        (SKILL_FILE, md.into_bytes()),
        (req.language.script_file(), req.code.clone().into_bytes()),
    ];
    if !req.tools.is_empty() {
        let tools = serde_json::to_string_pretty(&req.tools).unwrap_or_default();
        if tools.len() as u64 <= MAX_TOOLS_FILE {
            files.push((TOOLS_FILE, tools.into_bytes()));
        } else {
            tracing::warn!(
                skill = req.name,
                "the schemas of the tools it calls take {} bytes, more than the {MAX_TOOLS_FILE} \
                 kept in {TOOLS_FILE}: changes to them will be told by hash only",
                tools.len()
            );
        }
    }
    Ok(files)
}

impl CodeSkill {
    /// The schemas kept in `skill`'s `tools.json`, if any (read beneath its root, bounded).
    pub fn saved_schemas(skill: &Skill) -> ToolSchemas {
        skill
            .open()
            .ok()
            .and_then(|d| d.read_text(TOOLS_FILE, MAX_TOOLS_FILE).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
