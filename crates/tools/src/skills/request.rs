//! What a saved skill is made of: the request to save one ([`SaveRequest`]), its `SKILL.md`
//! (its version filled in under the save lock), and the hashes of the tool schemas it was
//! written against (canonical JSON, so equal schemas hash equal).

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The file that keeps the schemas of the tools a skill calls, as they were when it was saved.
pub const TOOLS_FILE: &str = "tools.json";

use super::skill::{
    META_INPUT_SCHEMA, META_LANGUAGE, META_OWNER, META_SCRIPT, META_TOOLS, META_VERSION,
    SkillLanguage, ToolHashes, ToolSchemas, yaml_string,
};

/// What `saveSkill` asks for.
#[derive(Debug, Clone)]
pub struct SaveRequest {
    pub name: String,
    pub description: String,
    pub code: String,
    pub language: SkillLanguage,
    pub input_schema: Option<Value>,
    /// The schemas of the tools the code calls.
    pub tools: ToolSchemas,
    /// The authenticated principal saving it (`token:alice`), or `None` (stdio, loopback).
    pub owner: Option<String>,
}

/// Where [`skill_md`] leaves the version (known only once the directory is read, under the
/// save lock).
pub(super) const VERSION_MARK: &str = "\"code-executor-mcp/version\": \"0\"";

/// `SKILL.md` with its version filled in.
pub(super) fn render_version(md: &[u8], version: u32) -> Vec<u8> {
    String::from_utf8_lossy(md)
        .replacen(
            VERSION_MARK,
            &format!(
                "{}: {}",
                yaml_string(META_VERSION),
                yaml_string(&version.to_string())
            ),
            1,
        )
        .into_bytes()
}
/// The `SKILL.md` of `req` (its version left at `0`: see [`render_version`]).
pub(super) fn skill_md(req: &SaveRequest) -> String {
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
    meta(META_VERSION, "0".to_string());
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
    md
}

/// `sha256:<hex>` of a tool's schemas as canonical JSON (object keys sorted).
pub fn schema_hash(schemas: &Value) -> String {
    use sha2::Digest;
    let canonical = canonical(schemas).to_string();
    let digest = sha2::Sha256::digest(canonical.as_bytes());
    format!("sha256:{}", hex(&digest))
}

pub fn hex(bytes: &[u8]) -> String {
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
