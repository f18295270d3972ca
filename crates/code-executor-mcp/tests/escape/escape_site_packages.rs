//! The site-packages gate, through the real server: without `--python-site-packages`, no
//! site-packages or dist-packages directory is importable or readable from `execute_python`,
//! whatever the interpreter's layout; with it, the interpreter's packages import.
//!
//! One attack per test, named after it; each code evaluates to `BLOCKED: ...` or
//! `ESCAPED: ...`. The shapes: Debian's `/usr/lib/python3/dist-packages` and
//! `/usr/local/lib/python3.X/dist-packages`, the site-packages inside the interpreter's own
//! prefix (as a pyenv or source build has it: `PREFIX/lib/python3.X/...`, here a copy of the
//! system interpreter with its stdlib hard-linked), a venv's, the user site, a `.pth` file
//! processed with `site.addsitedir`, `sys.path.append` then import, and `open()` of the files.
//! A sandbox that cannot be set up is a loud SKIP, or a failure under
//! `CODE_EXECUTOR_REQUIRE_SANDBOX=1`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::{Harness, TempDir, set_mode, skip_loudly, skip_or_fail_sandbox};

use crate::common::EXE;

const SYSTEM_PYTHON: &str = "/usr/bin/python3";
const CANARY: &str = "canary-site-7b1e";

fn mkdirs(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    for dir in path.ancestors() {
        if dir.starts_with(std::env::temp_dir()) && dir != std::env::temp_dir() {
            set_mode(dir, 0o755);
        }
    }
}

/// Plants `canary_pkg` (and `canary.pth`, which would import it and set a marker) in `dir`.
fn plant(dir: &Path) {
    mkdirs(&dir.join("canary_pkg"));
    std::fs::write(
        dir.join("canary_pkg/__init__.py"),
        format!("VALUE = {CANARY:?}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("canary.pth"),
        "import sys; sys.canary_pth_ran = True\n",
    )
    .unwrap();
}

fn py_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The server under attack, running `python` with or without `--python-site-packages`, with
/// `home` as its HOME (the user site is below it).
async fn server(python: &str, site_packages: bool, home: &Path) -> Option<Harness> {
    let mut args = vec![
        "--sandbox",
        "enforce",
        "--pool-size",
        "0",
        "--python-pool-size",
        "1",
        "--python",
        python,
    ];
    if site_packages {
        args.push("--python-site-packages");
    }
    let home = home.display().to_string();
    let h = Harness::start(EXE.as_ref(), json!({}), &args, &[("HOME", &home)]).await;
    let (v, is_error) = h.exec_python("1 + 1").await;
    if is_error {
        let reason = format!("{}: {}", v["error"]["name"], v["error"]["message"]);
        if reason.contains("refusing to run code") {
            skip_or_fail_sandbox(&format!("the sandbox cannot be set up: {reason}"));
            return None;
        }
        panic!("a trivial execution failed with {python}: {reason}");
    }
    Some(h)
}

async fn run(h: &Harness, code: &str) -> String {
    let (v, is_error): (Value, bool) = h
        .exec_python_with(json!({"code": code, "timeoutMs": 20_000}))
        .await;
    assert!(!is_error, "the attack code itself failed: {v}");
    let r = v["result"].as_str().unwrap_or_default().to_string();
    eprintln!("{r}");
    r
}

async fn blocked(h: &Harness, code: &str) {
    let r = run(h, code).await;
    assert!(r.starts_with("BLOCKED"), "the attack escaped: {r}");
}

/// `sys.path.append(dir)`, then `import canary_pkg` (or `module`).
fn import_attack(dir: &Path, module: &str) -> String {
    format!(
        r#"
import sys, importlib
sys.path.append({dir})
try:
    m = importlib.import_module({module})
    r = 'ESCAPED: imported %s from %s' % ({module}, getattr(m, '__file__', '?'))
except ImportError as e:
    r = 'BLOCKED: %r' % e
r
"#,
        dir = py_str(&dir.display().to_string()),
        module = py_str(module),
    )
}

/// `os.listdir(dir)` and `open()` of every entry found on the host (an empty listing, which a
/// hidden directory gives, reveals nothing).
fn read_attack(dir: &Path) -> String {
    let entries: Vec<String> = std::fs::read_dir(dir)
        .map(|e| {
            e.flatten()
                .filter(|e| e.path().is_file())
                .take(20)
                .map(|e| e.path().display().to_string())
                .collect()
        })
        .unwrap_or_default();
    format!(
        r#"
import os
got = []
try:
    n = len(os.listdir({dir}))
    if n:
        got.append('listdir: %d entries' % n)
except OSError:
    pass
for p in {files}:
    try:
        with open(p, 'rb') as f:
            got.append('read %s: %d bytes' % (p, len(f.read())))
    except OSError:
        pass
'ESCAPED: %r' % got if got else 'BLOCKED: nothing listed or read'
"#,
        dir = py_str(&dir.display().to_string()),
        files = serde_json::to_string(&entries).unwrap(),
    )
}

/// A copy of the system interpreter whose prefix is `root`: `bin/python3.X` and the stdlib
/// hard-linked to `lib/python3.X`, so its own site directories live inside its stdlib (as in a
/// pyenv or source build). Returns the interpreter and its in-prefix site directory (Debian's
/// build calls it `dist-packages`, others `site-packages`), or None when there is no system
/// interpreter to copy.
fn prefix_install(root: &Path) -> Option<(PathBuf, PathBuf)> {
    let real = std::fs::canonicalize(SYSTEM_PYTHON).ok()?;
    let out = std::process::Command::new(&real)
        .args([
            "-I",
            "-S",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .ok()?;
    let stdlib = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    let name = stdlib.file_name()?.to_owned();
    mkdirs(&root.join("bin"));
    mkdirs(&root.join("lib"));
    let exe = root.join("bin").join(real.file_name()?);
    std::fs::copy(&real, &exe).unwrap();
    set_mode(&exe, 0o755);
    let lib = root.join("lib").join(&name);
    let linked = std::process::Command::new("cp")
        .arg("-al")
        .arg(&stdlib)
        .arg(&lib)
        .status()
        .is_ok_and(|s| s.success());
    if !linked {
        let _ = std::fs::remove_dir_all(&lib);
        let copied = std::process::Command::new("cp")
            .arg("-a")
            .arg(&stdlib)
            .arg(&lib)
            .status()
            .unwrap();
        assert!(copied.success());
    }
    // Ask the copy where its site directories are; take the one inside its stdlib.
    let out = std::process::Command::new(&exe)
        .args([
            "-I",
            "-S",
            "-c",
            "import site, sysconfig\nprint('\\n'.join(site.getsitepackages() + [sysconfig.get_paths()['purelib']]))",
        ])
        .output()
        .unwrap();
    let site = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .find(|p| p.starts_with(&lib))?;
    mkdirs(&site);
    Some((exe, site))
}

// ------------------------------------------------------- Debian's system directories

/// A pure-Python package in `dir` (a directory with `__init__.py` and no extension module).
fn pure_package(dir: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().join("__init__.py").is_file())
        .filter(|e| {
            std::fs::read_dir(e.path()).is_ok_and(|mut d| {
                !d.any(|f| f.is_ok_and(|f| f.file_name().to_string_lossy().contains(".so")))
            })
        })
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    names.sort();
    names.into_iter().next()
}

const DEBIAN_DIST_PACKAGES: &str = "/usr/lib/python3/dist-packages";

#[tokio::test]
async fn import_a_package_from_usr_lib_python3_dist_packages() {
    let dir = Path::new(DEBIAN_DIST_PACKAGES);
    let Some(module) = pure_package(dir) else {
        skip_loudly(&format!("no pure-Python package in {DEBIAN_DIST_PACKAGES}"));
        return;
    };
    let home = TempDir::new("home");
    let Some(h) = server(SYSTEM_PYTHON, false, &home.0).await else {
        return;
    };
    blocked(&h, &import_attack(dir, &module)).await;
}

#[tokio::test]
async fn read_usr_lib_python3_dist_packages_with_open() {
    let dir = Path::new(DEBIAN_DIST_PACKAGES);
    if !dir.is_dir() {
        skip_loudly(&format!("no {DEBIAN_DIST_PACKAGES} on this machine"));
        return;
    }
    let home = TempDir::new("home");
    let Some(h) = server(SYSTEM_PYTHON, false, &home.0).await else {
        return;
    };
    blocked(&h, &read_attack(dir)).await;
}

#[tokio::test]
async fn read_usr_local_lib_python_site_packages_with_open() {
    // pip's directory on Debian (`dist-packages`) or elsewhere (`site-packages`).
    let dirs: Vec<PathBuf> = std::fs::read_dir("/usr/local/lib")
        .map(|e| e.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let Some(dir) = dirs
        .iter()
        .flat_map(|d| [d.join("dist-packages"), d.join("site-packages")])
        .find(|d| std::fs::read_dir(d).is_ok_and(|mut e| e.next().is_some()))
    else {
        skip_loudly("no non-empty /usr/local/lib/python3.X/{dist,site}-packages here");
        return;
    };
    let home = TempDir::new("home");
    let Some(h) = server(SYSTEM_PYTHON, false, &home.0).await else {
        return;
    };
    blocked(&h, &read_attack(&dir)).await;
}

#[tokio::test]
async fn the_site_packages_flag_makes_usr_lib_python3_dist_packages_importable() {
    let dir = Path::new(DEBIAN_DIST_PACKAGES);
    let Some(module) = pure_package(dir) else {
        skip_loudly(&format!("no pure-Python package in {DEBIAN_DIST_PACKAGES}"));
        return;
    };
    let home = TempDir::new("home");
    let Some(h) = server(SYSTEM_PYTHON, true, &home.0).await else {
        return;
    };
    // Found on sys.path, and its source is readable (importing it might need more).
    let r = run(
        &h,
        &format!(
            "import importlib.util\ns = importlib.util.find_spec({m})\n\
             'FOUND %d' % len(open(s.origin).read()) if s else 'MISSING'",
            m = py_str(&module)
        ),
    )
    .await;
    assert!(r.starts_with("FOUND"), "{module}: {r}");
}

// ---------------------------------------- an interpreter with site-packages in its prefix

#[tokio::test]
async fn import_from_the_interpreter_prefixs_site_packages() {
    let root = TempDir::new("prefix");
    let Some((python, site)) = prefix_install(&root.0) else {
        skip_loudly("no system interpreter to copy into a prefix");
        return;
    };
    plant(&site);
    let Some(h) = server(&python.display().to_string(), false, &root.0).await else {
        return;
    };
    blocked(&h, &import_attack(&site, "canary_pkg")).await;
}

#[tokio::test]
async fn read_the_interpreter_prefixs_site_packages_with_open() {
    let root = TempDir::new("prefix");
    let Some((python, site)) = prefix_install(&root.0) else {
        skip_loudly("no system interpreter to copy into a prefix");
        return;
    };
    plant(&site);
    let Some(h) = server(&python.display().to_string(), false, &root.0).await else {
        return;
    };
    blocked(&h, &read_attack(&site.join("canary_pkg"))).await;
    blocked(&h, &read_attack(&site)).await;
}

#[tokio::test]
async fn a_pth_file_in_the_prefixs_site_packages_through_addsitedir() {
    let root = TempDir::new("prefix");
    let Some((python, site)) = prefix_install(&root.0) else {
        skip_loudly("no system interpreter to copy into a prefix");
        return;
    };
    plant(&site);
    let Some(h) = server(&python.display().to_string(), false, &root.0).await else {
        return;
    };
    let code = format!(
        r#"
import site, sys
site.addsitedir({dir})
try:
    import canary_pkg
    imported = True
except ImportError:
    imported = False
ran = getattr(sys, 'canary_pth_ran', False)
'ESCAPED: pth ran=%s, imported=%s' % (ran, imported) if ran or imported else 'BLOCKED: the .pth was not processed'
"#,
        dir = py_str(&site.display().to_string())
    );
    blocked(&h, &code).await;
}

#[tokio::test]
async fn the_site_packages_flag_makes_the_prefixs_packages_importable() {
    let root = TempDir::new("prefix");
    let Some((python, site)) = prefix_install(&root.0) else {
        skip_loudly("no system interpreter to copy into a prefix");
        return;
    };
    plant(&site);
    let Some(h) = server(&python.display().to_string(), true, &root.0).await else {
        return;
    };
    let r = run(
        &h,
        "import sys, canary_pkg\n'%s pth=%s' % (canary_pkg.VALUE, getattr(sys, 'canary_pth_ran', False))",
    )
    .await;
    assert_eq!(r, format!("{CANARY} pth=True"));
}

// ------------------------------------------------------------------ a venv, the user site

/// A venv of the system interpreter with the canary planted in its site-packages.
fn venv(root: &Path) -> Option<(PathBuf, PathBuf)> {
    let dir = root.join("venv");
    let ok = std::process::Command::new(SYSTEM_PYTHON)
        .args(["-m", "venv", "--without-pip"])
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    mkdirs(&dir);
    let python = dir.join("bin/python");
    let out = std::process::Command::new(&python)
        .args(["-I", "-c", "import site; print(site.getsitepackages()[0])"])
        .output()
        .ok()?;
    let site = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    plant(&site);
    mkdirs(&site);
    Some((python, site))
}

#[tokio::test]
async fn import_from_a_venvs_site_packages() {
    let root = TempDir::new("venv");
    let Some((python, site)) = venv(&root.0) else {
        skip_loudly("cannot create a venv of the system interpreter here");
        return;
    };
    let Some(h) = server(&python.display().to_string(), false, &root.0).await else {
        return;
    };
    blocked(&h, &import_attack(&site, "canary_pkg")).await;
    blocked(&h, &read_attack(&site.join("canary_pkg"))).await;
}

#[tokio::test]
async fn the_site_packages_flag_makes_a_venvs_packages_importable() {
    let root = TempDir::new("venv");
    let Some((python, _)) = venv(&root.0) else {
        skip_loudly("cannot create a venv of the system interpreter here");
        return;
    };
    let Some(h) = server(&python.display().to_string(), true, &root.0).await else {
        return;
    };
    let r = run(&h, "import canary_pkg\ncanary_pkg.VALUE").await;
    assert_eq!(r, CANARY);
}

#[tokio::test]
async fn import_from_the_user_site_packages() {
    let home = TempDir::new("home");
    let out = std::process::Command::new(SYSTEM_PYTHON)
        .args(["-c", "import site; print(site.getusersitepackages())"])
        .env("HOME", &home.0)
        .output()
        .unwrap();
    let user_site = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    assert!(user_site.starts_with(&home.0), "{user_site:?}");
    plant(&user_site);
    for flag in [false, true] {
        let Some(h) = server(SYSTEM_PYTHON, flag, &home.0).await else {
            return;
        };
        blocked(&h, &import_attack(&user_site, "canary_pkg")).await;
        blocked(&h, &read_attack(&user_site.join("canary_pkg"))).await;
    }
}
