//! The filesystem view holds exactly what was asked for: the program, the shared libraries it
//! links, the locale its environment names, the read-only paths (minus hidden directories), devices, `/proc` and scratch. No
//! system library directory is mounted whole, so nothing installed beside the libraries (an
//! interpreter's `dist-packages`, other programs' data) can be read.
use std::path::Path;

use crate::common::*;
use sandbox::SandboxMode::{Disabled, Enforce};

#[test]
fn every_file_in_the_view_is_a_library_the_stdlib_the_locale_or_the_program() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("whole-view");
    let payload = python(&format!(
        "stray = []\n\
         for root, dirs, files in os.walk('/'):\n\
         \x20   if root in ('/proc', '/dev') or root.startswith(('/proc/', '/usr/lib/locale', {stdlib:?}, {scratch:?})):\n\
         \x20       dirs[:] = []\n\
         \x20       continue\n\
         \x20   for f in files:\n\
         \x20       p = os.path.join(root, f)\n\
         \x20       if p == {PYTHON:?} or os.path.islink(p):\n\
         \x20           continue\n\
         \x20       with open(p, 'rb') as fh:\n\
         \x20           if fh.read(4) != b'\\x7fELF':\n\
         \x20               stray.append(p)\n\
         print('stray', sorted(stray))",
        stdlib = PYTHON_STDLIB,
        scratch = fx.scratch.path().display().to_string(),
    ));
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["stray []"], "{confined:?}");
}

#[test]
fn read_dist_packages_beside_the_system_libraries() {
    if skip_unless_sandbox_available() || skip_unless_exists("/usr/lib/python3/dist-packages") {
        return;
    }
    let fx = Fixture::new("dist-packages");
    let payload = python(
        "attempt(lambda: len(os.listdir('/usr/lib/python3/dist-packages')))\n\
         attempt(lambda: len(os.listdir('/usr/lib/python3')))",
    );
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(
        confined.lines(),
        ["BLOCKED ENOENT", "BLOCKED ENOENT"],
        "{confined:?}"
    );
    let open = run(&payload, &fx.policy(Disabled));
    assert!(open.lines()[0].starts_with("OK "), "{open:?}");
}

#[test]
fn read_a_system_library_the_payload_does_not_link() {
    if skip_unless_sandbox_available() {
        return;
    }
    // Any shared library of the host that neither sh, PYTHON nor its extension modules load.
    let needed = python_view();
    let unneeded = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .find(|p| {
            p.is_file()
                && p.to_string_lossy().contains(".so")
                && !needed
                    .iter()
                    .any(|n| std::fs::canonicalize(n).ok() == std::fs::canonicalize(p).ok())
        });
    let Some(unneeded) = unneeded else {
        skip_loudly("no shared library outside the payloads' needs on this machine");
        return;
    };
    let fx = Fixture::new("unneeded-lib");
    let payload = python(&format!(
        "attempt(lambda: len(open({:?}, 'rb').read(4)))",
        unneeded.display().to_string()
    ));
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(
        confined.lines(),
        ["BLOCKED ENOENT"],
        "{unneeded:?}: {confined:?}"
    );
    let open = run(&payload, &fx.policy(Disabled));
    assert_eq!(open.lines(), ["OK 4"], "{open:?}");
}

/// A read-only tree `lib/` holding `mod.py` and `lib/site-packages/secret.py`.
fn tree(fx: &Fixture) -> std::path::PathBuf {
    let lib = fx.home.path().join("lib");
    std::fs::create_dir_all(lib.join("site-packages")).unwrap();
    std::fs::write(lib.join("mod.py"), "x = 1\n").unwrap();
    std::fs::write(lib.join("site-packages/secret.py"), SECRET).unwrap();
    lib
}

fn listing_payload(lib: &Path) -> sandbox::WorkerCommand {
    let lib = lib.display().to_string();
    python(&format!(
        "attempt(lambda: sorted(os.listdir({lib:?})))\n\
         attempt(lambda: os.listdir({lib:?} + '/site-packages'))\n\
         attempt(lambda: open({lib:?} + '/site-packages/secret.py').read())\n\
         attempt(lambda: open({lib:?} + '/site-packages/planted', 'w'))"
    ))
}

#[test]
fn read_a_hidden_directory_inside_a_read_only_path() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("hidden");
    let lib = tree(&fx);
    let mut policy = fx.policy(Enforce);
    policy.read_only_paths.push(lib.clone());
    policy.hidden_paths.push(lib.join("site-packages"));
    let confined = run(&listing_payload(&lib), &policy);
    assert_eq!(
        confined.lines(),
        [
            "OK ['mod.py', 'site-packages']",
            "OK []",
            "BLOCKED ENOENT",
            "BLOCKED EROFS"
        ],
        "{confined:?}"
    );
    assert!(!confined.stdout.contains(SECRET));
}

#[test]
fn a_hidden_directory_also_listed_read_only_stays_visible() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("hidden-shown");
    let lib = tree(&fx);
    let mut policy = fx.policy(Enforce);
    policy.read_only_paths.push(lib.clone());
    policy.read_only_paths.push(lib.join("site-packages"));
    policy.hidden_paths.push(lib.join("site-packages"));
    let confined = run(&listing_payload(&lib), &policy);
    assert_eq!(
        confined.lines(),
        [
            "OK ['mod.py', 'site-packages']",
            "OK ['secret.py']",
            &format!("OK {SECRET}"),
            "BLOCKED EROFS"
        ],
        "{confined:?}"
    );
}

#[test]
fn a_hidden_path_outside_the_view_leaves_no_trace() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("hidden-outside");
    let lib = tree(&fx);
    let mut policy = fx.policy(Enforce);
    policy.hidden_paths.push(lib.join("site-packages"));
    policy.hidden_paths.push("/does/not/exist".into());
    let payload = python(&format!(
        "print(os.path.exists({:?}))",
        fx.home.path().display().to_string()
    ));
    let confined = run(&payload, &policy);
    assert_eq!(confined.lines(), ["False"], "{confined:?}");
}
