//! `$ref` resolution: JSON pointers (`~0`, `~1`, percent-encoding) into the document, and,
//! only when the caller grants a directory, into files inside that directory.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use percent_encoding::percent_decode_str;
use serde_json::Value;

use crate::error::RefError;
use crate::parse::{Format, Limits, parse_value};

/// Where `$ref`s may lead outside the document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RefPolicy {
    /// Only `#/...` inside the document; any other reference is an error naming it.
    #[default]
    LocalOnly,
    /// Also relative file references (`schemas/pet.yaml#/Pet`) that stay inside this
    /// directory: `..`, absolute paths, symlinks leading out and URLs stay refused.
    Directory(PathBuf),
}

/// Longest chain of `$ref` to `$ref` followed before giving up.
pub(crate) const MAX_CHAIN: usize = 32;
/// Files a document may pull in through granted references.
const MAX_FILES: usize = 256;

/// A document: the root one or a granted file (its canonical path).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum DocId {
    Root,
    File(Arc<PathBuf>),
}

impl fmt::Display for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Root => Ok(()),
            Self::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A reference followed: the value it names and a key that is the same for every spelling
/// of the same target (for cycle detection and `$defs` names).
#[derive(Debug)]
pub(crate) struct Resolved<'a> {
    pub doc: DocId,
    pub key: String,
    /// The decoded pointer's last token (the component's name, usually).
    pub name: String,
    pub value: &'a Value,
}

/// Why a file reference cannot be followed (the reference and where it was met are added
/// when it is used).
#[derive(Debug, Clone)]
enum LinkError {
    Url,
    Refused(String),
    File(String),
}

/// The document and the files granted references reach, all read when the document is:
/// resolution then borrows, copies nothing and does no I/O.
pub(crate) struct Docs {
    pub root: Value,
    policy: RefPolicy,
    files: HashMap<Arc<PathBuf>, Value>,
    /// `(document, file part of a $ref)` to the file it names, or why not.
    links: HashMap<(DocId, String), Result<DocId, LinkError>>,
}

impl fmt::Debug for Docs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Docs")
            .field("policy", &self.policy)
            .field("files", &self.files.len())
            .finish_non_exhaustive()
    }
}

impl Docs {
    pub fn new(root: Value, policy: RefPolicy, limits: Limits) -> Self {
        let mut docs = Self {
            root,
            policy,
            files: HashMap::new(),
            links: HashMap::new(),
        };
        if let RefPolicy::Directory(dir) = &docs.policy {
            // A directory that cannot be canonicalised grants nothing (refs then fail).
            let base = dir.canonicalize().ok();
            docs.preload(base.as_deref(), &limits);
        }
        docs
    }

    /// Reads every file the documents' `$ref`s reach, transitively, within `limits` (the
    /// files' bytes together count against `max_bytes`) and [`MAX_FILES`].
    fn preload(&mut self, base: Option<&Path>, limits: &Limits) {
        let mut queue = vec![DocId::Root];
        let mut budget = limits.max_bytes;
        while let Some(doc) = queue.pop() {
            let value = match &doc {
                DocId::Root => &self.root,
                DocId::File(p) => match self.files.get(p) {
                    Some(v) => v,
                    None => continue,
                },
            };
            for part in file_parts(value) {
                let key = (doc.clone(), part);
                if self.links.contains_key(&key) {
                    continue;
                }
                let link = self.link(base, &doc, &key.1, limits, &mut budget, &mut queue);
                self.links.insert(key, link);
            }
        }
    }

    fn link(
        &mut self,
        base: Option<&Path>,
        from: &DocId,
        file: &str,
        limits: &Limits,
        budget: &mut usize,
        queue: &mut Vec<DocId>,
    ) -> Result<DocId, LinkError> {
        let refused = |why: &str| LinkError::Refused(why.to_owned());
        if url_like(file) {
            return Err(LinkError::Url);
        }
        let Some(base) = base else {
            return Err(refused("the granted directory does not exist"));
        };
        let decoded = percent_decode_str(file)
            .decode_utf8()
            .map_err(|_| refused("the path is not UTF-8 once percent-decoded"))?;
        if decoded.contains('\\') || decoded.contains('\0') {
            return Err(refused(
                "backslashes and NUL are not allowed in file references",
            ));
        }
        let rel = Path::new(decoded.as_ref());
        for component in rel.components() {
            match component {
                Component::Normal(_) | Component::CurDir => {}
                Component::ParentDir => {
                    return Err(refused("`..` is not allowed in file references"));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refused("absolute paths are not allowed in file references"));
                }
            }
        }
        let dir = match from {
            DocId::Root => base.to_path_buf(),
            DocId::File(p) => p
                .parent()
                .map_or_else(|| base.to_path_buf(), Path::to_path_buf),
        };
        let canonical = dir
            .join(rel)
            .canonicalize()
            .map_err(|e| LinkError::File(e.to_string()))?;
        if !canonical.starts_with(base) {
            return Err(refused(
                "it leads outside the granted directory (through a symlink?)",
            ));
        }
        if let Some((known, _)) = self.files.get_key_value(&canonical) {
            return Ok(DocId::File(known.clone()));
        }
        if self.files.len() >= MAX_FILES {
            return Err(refused("too many referenced files"));
        }
        let meta = std::fs::metadata(&canonical).map_err(|e| LinkError::File(e.to_string()))?;
        if !meta.is_file() {
            return Err(LinkError::File("not a regular file".to_owned()));
        }
        let len = usize::try_from(meta.len()).unwrap_or(usize::MAX);
        if len > *budget {
            return Err(LinkError::File(format!(
                "the referenced files together exceed {} bytes",
                limits.max_bytes
            )));
        }
        let bytes = std::fs::read(&canonical).map_err(|e| LinkError::File(e.to_string()))?;
        *budget = budget.saturating_sub(bytes.len());
        let format = if canonical.extension().is_some_and(|e| e == "json") {
            Format::Json
        } else {
            Format::Sniff
        };
        let value =
            parse_value(&bytes, format, limits).map_err(|e| LinkError::File(e.to_string()))?;
        let id = Arc::new(canonical);
        self.files.insert(id.clone(), value);
        queue.push(DocId::File(id.clone()));
        Ok(DocId::File(id))
    }

    /// Follows `value` while it is a `{"$ref": ...}`, at most [`MAX_CHAIN`] times.
    pub fn deref<'a>(
        &'a self,
        doc: &DocId,
        value: &'a Value,
        at: &str,
    ) -> Result<(DocId, &'a Value), RefError> {
        let mut doc = doc.clone();
        let mut current = value;
        let mut at = at.to_owned();
        for _ in 0..MAX_CHAIN {
            let Some(reference) = ref_of(current) else {
                return Ok((doc, current));
            };
            let next = self.resolve(&doc, reference, &at)?;
            at = next.key;
            doc = next.doc;
            current = next.value;
        }
        Err(RefError::ChainTooLong {
            reference: ref_of(value).unwrap_or_default().to_owned(),
            at,
            max: MAX_CHAIN,
        })
    }

    /// The value `reference` (written at `at` in `doc`) names.
    pub fn resolve<'a>(
        &'a self,
        doc: &DocId,
        reference: &str,
        at: &str,
    ) -> Result<Resolved<'a>, RefError> {
        let (file, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let tokens = pointer_tokens(fragment).map_err(|why| RefError::BadPointer {
            reference: reference.to_owned(),
            at: at.to_owned(),
            why: why.to_string(),
        })?;
        let target_doc = if file.is_empty() {
            doc.clone()
        } else {
            self.file_doc(doc, file, reference, at)?
        };
        let root = match &target_doc {
            DocId::Root => Some(&self.root),
            DocId::File(path) => self.files.get(path),
        };
        let Some(value) = root.and_then(|r| walk(r, &tokens)) else {
            return Err(RefError::Dangling {
                reference: reference.to_owned(),
                at: at.to_owned(),
                pointer: encode_pointer(&tokens),
            });
        };
        Ok(Resolved {
            key: format!("{target_doc}#{}", encode_pointer(&tokens)),
            doc: target_doc,
            name: tokens.last().cloned().unwrap_or_default(),
            value,
        })
    }

    fn file_doc(
        &self,
        from: &DocId,
        file: &str,
        reference: &str,
        at: &str,
    ) -> Result<DocId, RefError> {
        let link = match self.policy {
            RefPolicy::LocalOnly if url_like(file) => Err(LinkError::Url),
            RefPolicy::LocalOnly => {
                return Err(RefError::ExternalRefused {
                    reference: reference.to_owned(),
                    at: at.to_owned(),
                });
            }
            RefPolicy::Directory(_) => self
                .links
                .get(&(from.clone(), file.to_owned()))
                .cloned()
                .unwrap_or_else(|| {
                    Err(LinkError::Refused(
                        "it was not met when the document was read".to_owned(),
                    ))
                }),
        };
        link.map_err(|e| match e {
            LinkError::Url => RefError::UrlRefused {
                reference: reference.to_owned(),
                at: at.to_owned(),
            },
            LinkError::Refused(why) => RefError::PathRefused {
                reference: reference.to_owned(),
                at: at.to_owned(),
                why,
            },
            LinkError::File(why) => RefError::File {
                reference: reference.to_owned(),
                at: at.to_owned(),
                why,
            },
        })
    }
}

/// The file parts (before `#`) of every `$ref` string in `value`, once each.
fn file_parts(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    let file = r.split_once('#').map_or(r.as_str(), |(f, _)| f);
                    if !file.is_empty() && seen.insert(file) {
                        out.push(file.to_owned());
                    }
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    out
}

/// A URL (`scheme:`) or a network-path reference (`//host`).
fn url_like(file: &str) -> bool {
    has_scheme(file) || file.starts_with("//")
}

/// The `$ref` string of `{"$ref": "..."}`.
pub(crate) fn ref_of(value: &Value) -> Option<&str> {
    value.as_object()?.get("$ref")?.as_str()
}

fn has_scheme(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Why a fragment is not a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PointerError {
    #[error("not UTF-8 once percent-decoded")]
    NotUtf8,
    #[error("a pointer starts with `/`")]
    NoSlash,
    #[error("`~` must be followed by 0 or 1 in `{0}`")]
    Tilde(String),
}

/// A URI fragment's JSON pointer, percent-decoded and unescaped, as tokens.
pub(crate) fn pointer_tokens(fragment: &str) -> Result<Vec<String>, PointerError> {
    let decoded = percent_decode_str(fragment)
        .decode_utf8()
        .map_err(|_| PointerError::NotUtf8)?;
    if decoded.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = decoded.strip_prefix('/') else {
        return Err(PointerError::NoSlash);
    };
    rest.split('/').map(unescape_token).collect()
}

fn unescape_token(token: &str) -> Result<String, PointerError> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return Err(PointerError::Tilde(token.to_owned())),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Tokens back to a pointer (`~0`, `~1`), for messages and keys.
pub(crate) fn encode_pointer<S: AsRef<str>>(tokens: &[S]) -> String {
    tokens
        .iter()
        .map(|t| format!("/{}", t.as_ref().replace('~', "~0").replace('/', "~1")))
        .collect()
}

fn walk<'v>(mut value: &'v Value, tokens: &[String]) -> Option<&'v Value> {
    for token in tokens {
        value = match value {
            Value::Object(map) => map.get(token)?,
            Value::Array(items) => {
                if token.len() > 1 && token.starts_with('0') {
                    return None;
                }
                items.get(token.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use serde_json::json;

    fn docs(root: Value) -> Docs {
        Docs::new(root, RefPolicy::LocalOnly, Limits::default())
    }

    #[test]
    fn pointer_escapes_and_percent_encoding() {
        let d = docs(json!({"a/b": {"c~d": {"e f": 1}}, "arr": [10, 20]}));
        let r = d.resolve(&DocId::Root, "#/a~1b/c~0d/e%20f", "/x").unwrap();
        assert_eq!(*r.value, json!(1));
        assert_eq!(r.key, "#/a~1b/c~0d/e f");
        assert_eq!(
            *d.resolve(&DocId::Root, "#/arr/1", "/x").unwrap().value,
            json!(20)
        );
        assert!(matches!(
            d.resolve(&DocId::Root, "#/arr/01", "/x"),
            Err(RefError::Dangling { .. })
        ));
        assert!(matches!(
            d.resolve(&DocId::Root, "#/a~2", "/x"),
            Err(RefError::BadPointer { .. })
        ));
        assert!(matches!(
            d.resolve(&DocId::Root, "#a", "/x"),
            Err(RefError::BadPointer { .. })
        ));
    }

    #[test]
    fn chains_are_followed_and_loops_stop() {
        let d =
            docs(json!({"a": {"$ref": "#/b"}, "b": {"$ref": "#/c"}, "c": 3, "l": {"$ref": "#/l"}}));
        let start = json!({"$ref": "#/a"});
        assert_eq!(*d.deref(&DocId::Root, &start, "/s").unwrap().1, json!(3));
        let looping = json!({"$ref": "#/l"});
        assert!(matches!(
            d.deref(&DocId::Root, &looping, "/s"),
            Err(RefError::ChainTooLong { .. })
        ));
    }

    #[test]
    fn external_refs_are_refused_by_default() {
        let d = docs(json!({}));
        let err = d.resolve(&DocId::Root, "pet.yaml#/Pet", "/p").unwrap_err();
        assert!(err.to_string().contains("pet.yaml#/Pet"), "{err}");
        assert!(matches!(err, RefError::ExternalRefused { .. }));
        assert!(matches!(
            d.resolve(&DocId::Root, "https://evil.example/x.json#/a", "/p"),
            Err(RefError::UrlRefused { .. })
        ));
        assert!(matches!(
            d.resolve(&DocId::Root, "file:///etc/passwd", "/p"),
            Err(RefError::UrlRefused { .. })
        ));
        assert!(matches!(
            d.resolve(&DocId::Root, "//evil.example/x", "/p"),
            Err(RefError::UrlRefused { .. })
        ));
    }
}
