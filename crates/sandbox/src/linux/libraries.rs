//! The shared libraries a program loads, found the way the dynamic loader finds them, so the
//! filesystem view can hold exactly those files instead of whole library directories.
//!
//! For each ELF object: its program interpreter (`PT_INTERP`, e.g. `/lib64/ld-linux-x86-64.so.2`)
//! and each `DT_NEEDED` name, looked up in `DT_RPATH` (when there is no `DT_RUNPATH`; the
//! executable's too), `DT_RUNPATH` (`$ORIGIN` expanded), `/etc/ld.so.cache`, then the default
//! directories (those of `/etc/ld.so.conf` and musl's path file when there is no cache). A
//! candidate counts only when it is an ELF object of the same class and machine. Every library
//! found is parsed in turn. Names not found anywhere are left out: the loader would not find
//! them either, and the payload fails as it would on the host.
//!
//! Only headers are read (ELF header, program headers, the dynamic section and its string
//! table), so a few hundred objects take milliseconds. Results for a payload program are
//! cached per file identity, so [`crate::command`] pays this once per program.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Libraries that glibc loads with `dlopen` behind a program's back: `libgcc_s.so.1` for
/// `pthread_exit` and `pthread_cancel` (thread exit at interpreter shutdown), which abort the
/// process when it is missing. Added to every dynamically linked program, when found.
pub(crate) const RUNTIME_DLOPENED: &[&str] = &["libgcc_s.so.1"];

/// Bounds on what is read of one file, against hostile or broken objects.
const MAX_PROGRAM_HEADERS: usize = 512;
const MAX_DYNAMIC_BYTES: u64 = 1 << 20;
const MAX_STRTAB_BYTES: u64 = 16 << 20;
const MAX_LD_CACHE_BYTES: u64 = 64 << 20;
/// Objects parsed for one request, at most.
const MAX_OBJECTS: usize = 20_000;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const DT_STRSZ: u64 = 10;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;

/// What the loader needs to know of one object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Elf {
    /// (class, data encoding, machine): a library must match its user.
    pub kind: (u8, u8, u16),
    pub interp: Option<PathBuf>,
    pub needed: Vec<String>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
}

/// Parses the headers of `path`; `None` when it is not an ELF object (a script, data) or
/// cannot be read.
pub(crate) fn parse(path: &Path) -> Option<Elf> {
    let file = File::open(path).ok()?;
    let mut ident = [0u8; 64];
    file.read_exact_at(&mut ident, 0).ok()?;
    if &ident[..4] != b"\x7fELF" {
        return None;
    }
    let (class, data) = (ident[4], ident[5]);
    let r = Reader {
        big: data == 2,
        wide: class == 2,
    };
    if !matches!(class, 1 | 2) || !matches!(data, 1 | 2) {
        return None;
    }
    let machine = r.u16(&ident, 18);
    let (phoff, phentsize, phnum) = if r.wide {
        (r.u64(&ident, 32), r.u16(&ident, 54), r.u16(&ident, 56))
    } else {
        (
            u64::from(r.u32(&ident, 28)),
            r.u16(&ident, 42),
            r.u16(&ident, 44),
        )
    };
    let (phentsize, phnum) = (usize::from(phentsize), usize::from(phnum));
    let min_entry = if r.wide { 56 } else { 32 };
    if phentsize < min_entry || phnum > MAX_PROGRAM_HEADERS {
        return None;
    }
    let mut table = vec![0u8; phentsize * phnum];
    file.read_exact_at(&mut table, phoff).ok()?;
    // (offset, vaddr, filesz) of each PT_LOAD, for turning DT_STRTAB's address into an offset.
    let mut loads = Vec::new();
    let mut dynamic = None;
    let mut elf = Elf {
        kind: (class, data, machine),
        ..Elf::default()
    };
    for entry in table.chunks_exact(phentsize) {
        let kind = r.u32(entry, 0);
        let (offset, vaddr, filesz) = if r.wide {
            (r.u64(entry, 8), r.u64(entry, 16), r.u64(entry, 32))
        } else {
            (
                u64::from(r.u32(entry, 4)),
                u64::from(r.u32(entry, 8)),
                u64::from(r.u32(entry, 16)),
            )
        };
        match kind {
            PT_LOAD => loads.push((offset, vaddr, filesz)),
            PT_DYNAMIC => dynamic = Some((offset, filesz)),
            PT_INTERP if filesz <= 4096 => {
                let mut buf = vec![0u8; usize::try_from(filesz).ok()?];
                file.read_exact_at(&mut buf, offset).ok()?;
                let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
                let interp = PathBuf::from(std::ffi::OsStr::from_bytes(&buf[..end]));
                elf.interp = interp.is_absolute().then_some(interp);
            }
            _ => {}
        }
    }
    let Some((offset, size)) = dynamic else {
        return Some(elf); // statically linked
    };
    let mut dyn_bytes = vec![0u8; usize::try_from(size.min(MAX_DYNAMIC_BYTES)).ok()?];
    file.read_exact_at(&mut dyn_bytes, offset).ok()?;
    let entry_size = if r.wide { 16 } else { 8 };
    let mut strtab = None;
    let mut strsz = 0;
    let mut refs: Vec<(u64, u64)> = Vec::new();
    for entry in dyn_bytes.chunks_exact(entry_size) {
        let (tag, val) = if r.wide {
            (r.u64(entry, 0), r.u64(entry, 8))
        } else {
            (u64::from(r.u32(entry, 0)), u64::from(r.u32(entry, 4)))
        };
        match tag {
            DT_NULL => break,
            DT_STRTAB => strtab = Some(val),
            DT_STRSZ => strsz = val,
            DT_NEEDED | DT_RPATH | DT_RUNPATH => refs.push((tag, val)),
            _ => {}
        }
    }
    let strtab = strtab?;
    let strtab_offset = loads
        .iter()
        .find(|(_, vaddr, filesz)| strtab >= *vaddr && strtab < vaddr.saturating_add(*filesz))
        .map(|(offset, vaddr, _)| strtab - vaddr + offset)?;
    let mut strings = vec![0u8; usize::try_from(strsz.min(MAX_STRTAB_BYTES)).ok()?];
    file.read_exact_at(&mut strings, strtab_offset).ok()?;
    for (tag, at) in refs {
        let Some(rest) = usize::try_from(at).ok().and_then(|at| strings.get(at..)) else {
            continue;
        };
        let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        let Ok(text) = std::str::from_utf8(&rest[..end]) else {
            continue;
        };
        let list = match tag {
            DT_NEEDED => {
                elf.needed.push(text.to_owned());
                continue;
            }
            DT_RPATH => &mut elf.rpath,
            _ => &mut elf.runpath,
        };
        list.extend(text.split(':').filter(|d| !d.is_empty()).map(String::from));
    }
    Some(elf)
}

struct Reader {
    big: bool,
    wide: bool,
}

impl Reader {
    fn bytes<const N: usize>(&self, buf: &[u8], at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = buf.get(at..at + N) {
            out.copy_from_slice(src);
        }
        out
    }
    fn u16(&self, buf: &[u8], at: usize) -> u16 {
        let b = self.bytes::<2>(buf, at);
        if self.big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    }
    fn u32(&self, buf: &[u8], at: usize) -> u32 {
        let b = self.bytes::<4>(buf, at);
        if self.big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    }
    fn u64(&self, buf: &[u8], at: usize) -> u64 {
        let b = self.bytes::<8>(buf, at);
        if self.big {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        }
    }
}

/// `/etc/ld.so.cache` (glibc's format "glibc-ld.so.cache1.1", alone or after the old format):
/// library name to paths, in the cache's order.
fn ld_cache() -> &'static HashMap<String, Vec<PathBuf>> {
    static CACHE: OnceLock<HashMap<String, Vec<PathBuf>>> = OnceLock::new();
    CACHE.get_or_init(|| read_ld_cache(Path::new("/etc/ld.so.cache")).unwrap_or_default())
}

pub(crate) fn read_ld_cache(path: &Path) -> Option<HashMap<String, Vec<PathBuf>>> {
    let file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    if len > MAX_LD_CACHE_BYTES {
        return None;
    }
    let mut bytes = vec![0u8; usize::try_from(len).ok()?];
    file.read_exact_at(&mut bytes, 0).ok()?;
    const OLD: &[u8] = b"ld.so-1.7.0";
    const NEW: &[u8] = b"glibc-ld.so.cache1.1";
    let le = Reader {
        big: false,
        wide: true,
    };
    let start = if bytes.starts_with(NEW) {
        0
    } else if bytes.starts_with(OLD) {
        // Old header (16 bytes) and 12-byte entries, then the new format aligned to 8.
        let n = usize::try_from(le.u32(&bytes, 12)).ok()?;
        (16 + n.checked_mul(12)?).next_multiple_of(8)
    } else {
        return None;
    };
    let base = bytes.get(start..)?;
    if !base.starts_with(NEW) {
        return None;
    }
    let n = usize::try_from(le.u32(base, 20)).ok()?;
    let string_at = |offset: u32| -> Option<&[u8]> {
        let rest = base.get(usize::try_from(offset).ok()?..)?;
        Some(&rest[..rest.iter().position(|b| *b == 0)?])
    };
    let mut map: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for i in 0..n {
        let entry = base.get(48 + i * 24..48 + (i + 1) * 24)?;
        let (key, value) = (le.u32(entry, 4), le.u32(entry, 8));
        let (Some(key), Some(value)) = (string_at(key), string_at(value)) else {
            continue;
        };
        let Ok(key) = std::str::from_utf8(key) else {
            continue;
        };
        map.entry(key.to_owned())
            .or_default()
            .push(PathBuf::from(std::ffi::OsStr::from_bytes(value)));
    }
    Some(map)
}

/// The directories searched after the cache: glibc's trusted directories, those configured in
/// `/etc/ld.so.conf` (for a host without a cache) and musl's path file.
fn default_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let mut dirs: Vec<PathBuf> = Vec::new();
        conf_dirs(Path::new("/etc/ld.so.conf"), &mut dirs, 0);
        if let Ok(entries) = std::fs::read_dir("/etc") {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.as_bytes();
                if name.starts_with(b"ld-musl-")
                    && name.ends_with(b".path")
                    && let Ok(text) = std::fs::read_to_string(entry.path())
                {
                    dirs.extend(
                        text.split([':', '\n'])
                            .map(str::trim)
                            .filter(|d| d.starts_with('/'))
                            .map(PathBuf::from),
                    );
                }
            }
        }
        for d in ["/lib64", "/usr/lib64", "/lib", "/usr/local/lib", "/usr/lib"] {
            dirs.push(d.into());
        }
        let mut seen = BTreeSet::new();
        dirs.retain(|d| seen.insert(d.clone()));
        dirs
    })
}

/// Directories of an `ld.so.conf`, following `include` globs of the simple `dir/*.conf` form.
fn conf_dirs(path: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(pattern) = line.strip_prefix("include") {
            let pattern = Path::new(pattern.trim());
            let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name()) else {
                continue;
            };
            let suffix = name.to_string_lossy().trim_start_matches('*').to_owned();
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut files: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(&suffix))
                .collect();
            files.sort();
            if depth < 4 {
                for file in files {
                    conf_dirs(&file, out, depth + 1);
                }
            }
        } else if line.starts_with('/') {
            out.push(PathBuf::from(line));
        }
    }
}

/// Expands `$ORIGIN` in one RPATH/RUNPATH entry; `None` for other tokens or relative paths.
fn expand(dir: &str, origin: &Path) -> Option<PathBuf> {
    let origin = origin.to_str()?;
    let dir = dir.replace("${ORIGIN}", origin).replace("$ORIGIN", origin);
    (!dir.contains('$') && dir.starts_with('/')).then(|| PathBuf::from(dir))
}

/// Where `name`, needed by an object of `kind`, is found: the first match on the object's search
/// path, else every matching entry of the cache (the loader picks one by CPU features), else the
/// first match in the default directories.
fn find(name: &str, kind: (u8, u8, u16), search: &[PathBuf]) -> Vec<PathBuf> {
    let matches = |p: &Path| parse(p).is_some_and(|e| e.kind == kind);
    if name.contains('/') {
        let p = PathBuf::from(name);
        return if p.is_absolute() && matches(&p) {
            vec![p]
        } else {
            Vec::new()
        };
    }
    if let Some(p) = search.iter().map(|d| d.join(name)).find(|p| matches(p)) {
        return vec![p];
    }
    let cached: Vec<PathBuf> = ld_cache()
        .get(name)
        .map(|paths| paths.iter().filter(|p| matches(p)).cloned().collect())
        .unwrap_or_default();
    if !cached.is_empty() {
        return cached;
    }
    default_dirs()
        .iter()
        .map(|d| d.join(name))
        .find(|p| matches(p))
        .into_iter()
        .collect()
}

/// The shared libraries `objects` load (transitively), plus `also` (names loaded with `dlopen`),
/// as the paths the loader opens, in a stable order. Non-ELF objects and statically linked ones
/// contribute nothing; names found nowhere are left out. An object is in the answer only when
/// another one needs it.
pub(crate) fn closure(objects: &[PathBuf], also: &[&str]) -> Vec<PathBuf> {
    let mut found: BTreeSet<PathBuf> = BTreeSet::new();
    let mut queue: VecDeque<(PathBuf, Option<Arc<Vec<PathBuf>>>)> =
        objects.iter().map(|o| (o.clone(), None)).collect();
    let mut parsed = 0;
    let mut first_kind = None;
    while let Some((path, inherited_rpath)) = queue.pop_front() {
        parsed += 1;
        if parsed > MAX_OBJECTS {
            break;
        }
        let Some(elf) = parse(&path) else { continue };
        first_kind.get_or_insert(elf.kind);
        let origin = path.parent().unwrap_or(Path::new("/"));
        let expand_all = |dirs: &[String]| -> Vec<PathBuf> {
            dirs.iter().filter_map(|d| expand(d, origin)).collect()
        };
        // DT_RPATH applies to what this object loads and, for objects without DT_RUNPATH, to
        // what those load in turn (approximated: the RPATH of the first object, an executable,
        // is inherited by every library below it).
        let own_rpath = expand_all(&elf.rpath);
        let mut search = Vec::new();
        if elf.runpath.is_empty() {
            search.extend(own_rpath.iter().cloned());
            if let Some(inherited) = &inherited_rpath {
                search.extend(inherited.iter().cloned());
            }
        }
        search.extend(expand_all(&elf.runpath));
        let pass_on = match &inherited_rpath {
            Some(inherited) => Some(inherited.clone()),
            None if !own_rpath.is_empty() => Some(Arc::new(own_rpath)),
            None => None,
        };
        if let Some(interp) = &elf.interp
            && found.insert(interp.clone())
        {
            queue.push_back((interp.clone(), None));
        }
        for name in &elf.needed {
            for lib in find(name, elf.kind, &search) {
                if found.insert(lib.clone()) {
                    queue.push_back((lib, pass_on.clone()));
                }
            }
        }
    }
    if let Some(kind) = first_kind
        && !found.is_empty()
    {
        for name in also {
            for lib in find(name, kind, &[]) {
                if found.insert(lib.clone()) {
                    for dep in closure(std::slice::from_ref(&lib), &[]) {
                        found.insert(dep);
                    }
                }
            }
        }
    }
    found.into_iter().collect()
}

/// Where glibc keeps compiled locales.
const LOCALE_DIR: &str = "/usr/lib/locale";

/// The locale data a program started with `env` reads: for each locale named by `LC_ALL`,
/// `LANG` or another `LC_*` variable (other than `C` and `POSIX`, which are built in), its
/// directory under `/usr/lib/locale` as named and as glibc normalises the codeset
/// (`C.UTF-8` -> `C.utf8`), else the locale archive. Without it `setlocale(LC_ALL, "")`
/// fails inside the sandbox.
pub(crate) fn locale_files(env: &[(std::ffi::OsString, std::ffi::OsString)]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (key, value) in env {
        let key = key.as_bytes();
        if key != b"LANG" && !key.starts_with(b"LC_") {
            continue;
        }
        let Some(name) = value.to_str() else { continue };
        if matches!(name, "" | "C" | "POSIX") || name.contains('/') || name.starts_with('.') {
            continue;
        }
        let normalised = match name.split_once('.') {
            Some((lang, codeset)) => {
                let (codeset, modifier) = match codeset.split_once('@') {
                    Some((c, m)) => (c, format!("@{m}")),
                    None => (codeset, String::new()),
                };
                let codeset: String = codeset
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .map(|c| c.to_ascii_lowercase())
                    .collect();
                format!("{lang}.{codeset}{modifier}")
            }
            None => name.to_owned(),
        };
        let mut found = false;
        for candidate in [name, normalised.as_str()] {
            let path = Path::new(LOCALE_DIR).join(candidate);
            if path.is_dir() {
                found = true;
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
        let archive = Path::new(LOCALE_DIR).join("locale-archive");
        if !found && archive.is_file() && !out.contains(&archive) {
            out.push(archive);
        }
    }
    out
}

/// [`closure`] of one payload program with [`RUNTIME_DLOPENED`], cached by the file's identity
/// (device, inode, size, modification time): a replaced program is looked at again.
pub(crate) fn of_program(program: &Path) -> Arc<Vec<PathBuf>> {
    type Key = (PathBuf, u64, u64, u64, i64, i64);
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<Vec<PathBuf>>>>> = OnceLock::new();
    let key = std::fs::metadata(program).ok().map(|m| {
        (
            program.to_path_buf(),
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
        )
    });
    let cache = CACHE.get_or_init(Default::default);
    if let Some(key) = &key
        && let Ok(map) = cache.lock()
        && let Some(hit) = map.get(key)
    {
        return hit.clone();
    }
    let libs = Arc::new(closure(&[program.to_path_buf()], RUNTIME_DLOPENED));
    if let Some(key) = key
        && let Ok(mut map) = cache.lock()
    {
        map.insert(key, libs.clone());
    }
    libs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this_exe() -> PathBuf {
        std::env::current_exe().unwrap()
    }

    #[test]
    fn this_test_binary_needs_libc_and_its_interpreter() {
        let exe = this_exe();
        let elf = parse(&exe).unwrap();
        assert!(
            elf.needed.iter().any(|n| n.starts_with("libc.so")),
            "{elf:?}"
        );
        let libs = closure(&[exe], &[]);
        let interp = elf.interp.unwrap();
        assert!(libs.contains(&interp), "{libs:?}");
        assert!(
            libs.iter().any(|l| l
                .file_name()
                .is_some_and(|n| n.as_bytes().starts_with(b"libc.so"))),
            "{libs:?}"
        );
        // Every entry is a real ELF object of the same kind.
        for lib in &libs {
            assert_eq!(parse(lib).map(|e| e.kind), Some(elf.kind), "{lib:?}");
        }
    }

    #[test]
    fn scripts_and_data_need_nothing() {
        let dir = std::env::temp_dir().join(format!("sandbox-libs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("script");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        let truncated = dir.join("truncated");
        std::fs::write(&truncated, b"\x7fELF\x02\x01\x01").unwrap();
        assert_eq!(parse(&script), None);
        assert_eq!(parse(&truncated), None);
        assert_eq!(
            closure(&[script, truncated], &["libgcc_s.so.1"]),
            Vec::<PathBuf>::new()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn locales_named_by_the_environment_are_found_under_their_normalised_name() {
        let env = |k: &str, v: &str| vec![(k.into(), v.into())];
        assert_eq!(locale_files(&env("LANG", "C")), Vec::<PathBuf>::new());
        assert_eq!(
            locale_files(&env("LANG", "../../etc")),
            Vec::<PathBuf>::new()
        );
        assert_eq!(locale_files(&env("PATH", "C.UTF-8")), Vec::<PathBuf>::new());
        let c_utf8 = Path::new(LOCALE_DIR).join("C.utf8");
        if c_utf8.is_dir() {
            assert_eq!(locale_files(&env("LANG", "C.UTF-8")), [c_utf8]);
        }
    }

    #[test]
    fn origin_is_expanded_and_other_tokens_are_skipped() {
        let origin = Path::new("/opt/py/bin");
        assert_eq!(
            expand("$ORIGIN/../lib", origin),
            Some(PathBuf::from("/opt/py/bin/../lib"))
        );
        assert_eq!(
            expand("${ORIGIN}/lib", origin),
            Some(PathBuf::from("/opt/py/bin/lib"))
        );
        assert_eq!(expand("$LIB/x", origin), None);
        assert_eq!(expand("relative", origin), None);
    }

    #[test]
    fn the_loader_cache_is_read_when_present() {
        let Some(cache) = read_ld_cache(Path::new("/etc/ld.so.cache")) else {
            return; // musl and some minimal images have none
        };
        assert!(
            cache.keys().any(|k| k.starts_with("libc.so")),
            "{:?}",
            cache.keys().take(5).collect::<Vec<_>>()
        );
    }
}
