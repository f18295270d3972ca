//! Read grants in the shapes only their owner can read (root's 0700 directory, which is
//! tempfile's default; 0600 files; a directory below a 0700 one; a file of another uid), and
//! the error every refused file operation gives: its true cause, in both languages.

use super::*;

/// The shapes of `a_grant_only_root_could_read_is_readable_as_root`, under one ceiling `base`
/// (0755): `tmp/` 0700 (as tempfile makes it) with `data.txt` 0600 and `sub/` 0700 with
/// `inner.txt`; `open/closed/` (a 0700 directory inside a 0755 one) with `c.txt`;
/// `locked/deep/` (a 0755 directory below a 0700 one) with `d.txt`; `root600.txt`; and
/// `their600.txt`, of uid 1234 (chowned only when the test runs as root).
struct Shapes {
    base: TempDir,
}

impl Shapes {
    fn new() -> Self {
        let base = TempDir::new("grants");
        let b = &base.0;
        let write = |rel: &str, text: &str, mode: u32| {
            let p = b.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            test_support::set_mode(&p, mode);
        };
        write("tmp/data.txt", "tmp data\n", 0o600);
        write("tmp/sub/inner.txt", "inner\n", 0o644);
        write("open/closed/c.txt", "closed\n", 0o644);
        write("locked/deep/d.txt", "deep\n", 0o644);
        write("root600.txt", "root's 0600\n", 0o600);
        write("their600.txt", "their 0600\n", 0o600);
        write("tmp/nobody.txt", "no bits\n", 0o000);
        for (dir, mode) in [
            ("tmp/sub", 0o700),
            ("tmp", 0o700),
            ("open", 0o755),
            ("open/closed", 0o700),
            ("locked/deep", 0o755),
            ("locked", 0o700),
        ] {
            test_support::set_mode(&b.join(dir), mode);
        }
        if nix::unistd::geteuid().is_root() {
            nix::unistd::chown(
                &b.join("their600.txt"),
                Some(1234.into()),
                Some(1234.into()),
            )
            .unwrap();
        }
        Shapes { base }
    }

    fn path(&self, rel: &str) -> String {
        self.base.0.join(rel).display().to_string()
    }
}

/// As root, every shape reads (the sandbox is uid 65534, which the modes refuse: root opens the
/// grants and the view maps their owner to the sandbox, `docs/sandbox.md`); writes to them
/// stay refused and nothing beside them is visible.
#[tokio::test]
async fn a_grant_only_root_could_read_is_readable_as_root() {
    if !nix::unistd::geteuid().is_root() {
        test_support::skip_loudly(
            "needs root: the grants of this test are of paths only root can read",
        );
        return;
    }
    let s = Shapes::new();
    let (h, _d) = server(&s.base.0, http_server()).await;
    let grants = json!({"read": [
        s.path("tmp"), s.path("open/closed"), s.path("locked/deep"), s.path("root600.txt"),
        s.path("their600.txt"),
    ]});
    let files = [
        ("tmp/data.txt", "tmp data\n"),
        ("tmp/sub/inner.txt", "inner\n"),
        ("open/closed/c.txt", "closed\n"),
        ("locked/deep/d.txt", "deep\n"),
        ("root600.txt", "root's 0600\n"),
        ("their600.txt", "their 0600\n"),
    ];
    for lang in BOTH {
        for (rel, text) in files {
            let v = ok(&h, lang, &read_code(lang, &s.path(rel)), grants.clone()).await;
            assert_eq!(v, text, "{lang:?}: {rel}");
        }
        let tmp = s.path("tmp");
        let code = lang.pick(
            format!("return (await fs.readdir('{tmp}')).sort();"),
            format!("import os\nsorted(os.listdir('{tmp}'))"),
        );
        let v = ok(&h, lang, &code, grants.clone()).await;
        assert_eq!(v, json!(["data.txt", "nobody.txt", "sub"]), "{lang:?}");
        // Read-only all the same, and the 0700 directory beside the grants is not there.
        let code = lang.pick(
            format!("await fs.writeFile('{tmp}/data.txt', 'x')"),
            format!("open('{tmp}/data.txt', 'a').write('x')"),
        );
        let (_, msg) = fails(&h, lang, &code, grants.clone()).await;
        assert!(msg.contains("permissions.write"), "{lang:?}: {msg}");
        let (_, msg) = fails(
            &h,
            lang,
            &read_code(lang, &s.path("locked/x")),
            grants.clone(),
        )
        .await;
        assert!(msg.contains("no read grant covers"), "{lang:?}: {msg}");
    }
    assert_eq!(
        std::fs::read_to_string(s.base.0.join("tmp/data.txt")).unwrap(),
        "tmp data\n"
    );
}

/// Every refused file operation names its true cause: a read the file's own permissions refuse
/// says so (never "nothing is writable"), a missing file is missing, a path outside the grants
/// names the read grant, a write names the write grant or the workspace.
#[tokio::test]
async fn a_refused_file_operation_names_its_true_cause() {
    let s = Shapes::new();
    let (h, _d) = server(&s.base.0, http_server()).await;
    let tmp = s.path("tmp");
    let read = json!({"read": [tmp]});
    let write = json!({"read": [tmp], "write": true});
    for lang in BOTH {
        // The file's mode refuses the read (0000, whoever the sandbox reads it as).
        let (_, msg) = fails(
            &h,
            lang,
            &read_code(lang, &format!("{tmp}/nobody.txt")),
            read.clone(),
        )
        .await;
        assert!(
            msg.contains("EACCES") || msg.contains("Permission denied"),
            "{lang:?}: {msg}"
        );
        assert!(
            msg.contains("the file permissions refuse the sandbox")
                && msg.contains("mode 0000")
                && !msg.contains("writable")
                && !msg.contains("permissions.write")
                && !msg.contains("no read grant"),
            "{lang:?}: {msg}"
        );
        // Missing inside a grant: just missing.
        let (_, msg) = fails(
            &h,
            lang,
            &read_code(lang, &format!("{tmp}/gone.txt")),
            read.clone(),
        )
        .await;
        assert!(
            (msg.contains("ENOENT") || msg.contains("No such file"))
                && !msg.contains("writable")
                && !msg.contains("no read grant"),
            "{lang:?}: {msg}"
        );
        // Outside every grant: the read grant.
        let (_, msg) = fails(
            &h,
            lang,
            &read_code(lang, &s.path("root600.txt")),
            read.clone(),
        )
        .await;
        assert!(
            msg.contains("no read grant covers") && !msg.contains("writable"),
            "{lang:?}: {msg}"
        );
        // Writes, without a write grant and with one, into a grant and elsewhere; a directory
        // made is a write too.
        for (code, perms, want) in [
            (
                lang.pick(
                    format!("await fs.writeFile('{tmp}/new.txt', 'x')"),
                    format!("open('{tmp}/new.txt', 'w')"),
                ),
                read.clone(),
                "nothing is writable",
            ),
            (
                lang.pick(
                    format!("await fs.mkdir('{tmp}/d')"),
                    format!("import os\nos.mkdir('{tmp}/d')"),
                ),
                read.clone(),
                "nothing is writable",
            ),
            (
                lang.pick(
                    "await fs.mkdir('/nowhere/d')".to_owned(),
                    "import os\nos.mkdir('/nowhere/d')".to_owned(),
                ),
                read.clone(),
                "nothing is writable",
            ),
            (
                lang.pick(
                    format!("await fs.writeFile('{tmp}/new.txt', 'x')"),
                    format!("open('{tmp}/new.txt', 'w')"),
                ),
                write.clone(),
                "only the workspace",
            ),
            (
                lang.pick(
                    format!("await fs.mkdir('{tmp}/d')"),
                    format!("import pathlib\npathlib.Path('{tmp}/d').mkdir()"),
                ),
                write.clone(),
                "only the workspace",
            ),
        ] {
            let (_, msg) = fails(&h, lang, &code, perms).await;
            assert!(msg.contains(want), "{lang:?}: {code}: {msg}");
            assert!(!msg.contains("no read grant"), "{lang:?}: {code}: {msg}");
        }
    }
    // A directory listing the mode refuses says the same.
    test_support::set_mode(&s.base.0.join("tmp/sub"), 0o000);
    for lang in BOTH {
        let code = lang.pick(
            format!("await fs.readdir('{tmp}/sub')"),
            format!("import os\nos.listdir('{tmp}/sub')"),
        );
        let (_, msg) = fails(&h, lang, &code, read.clone()).await;
        assert!(
            msg.contains("the file permissions refuse the sandbox")
                && msg.contains("may not be read")
                && !msg.contains("writable"),
            "{lang:?}: {msg}"
        );
    }
    test_support::set_mode(&s.base.0.join("tmp/sub"), 0o700);
}

/// The uid (and gid) the server runs as in `a_normal_user_reads_the_directories_it_owns`: no
/// account is needed, the sandbox only maps the number.
const NORMAL_USER: u32 = 4321;

/// A server started as [`NORMAL_USER`] (through `setpriv`, by a wrapper script), with `base` as
/// its read ceiling; its state, cache and home in `home`, which that user owns. `None` (after a
/// loud SKIP) where that cannot be: the test is not root, or `setpriv` is missing.
async fn server_as_normal_user(base: &Path, home: &Path) -> Option<(Harness, TempConfig)> {
    if !nix::unistd::geteuid().is_root() {
        test_support::skip_loudly("needs root to start the server as another (normal) user");
        return None;
    }
    let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        test_support::skip_loudly("needs setpriv (util-linux) to start the server as another user");
        return None;
    };
    let wrapper = home.join("as-user.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec {setpriv} --reuid={NORMAL_USER} --regid={NORMAL_USER} --clear-groups -- {EXE} \"$@\"\n"
        ),
    )
    .unwrap();
    test_support::set_mode(&wrapper, 0o755);
    let sub = |d: &str| {
        let p = home.join(d);
        std::fs::create_dir_all(&p).unwrap();
        nix::unistd::chown(&p, Some(NORMAL_USER.into()), Some(NORMAL_USER.into())).unwrap();
        p.display().to_string()
    };
    let (state, cache, user_home) = (sub("state"), sub("cache"), sub("home"));
    let settings = json!({"permissions": {"read": [base], "write": true}});
    Some(
        Harness::with_settings(
            &wrapper,
            json!({ "fx": fixture_entry("fx") }),
            &settings,
            &[
                ("CODE_EXECUTOR_POOL_SIZE", "1"),
                ("XDG_STATE_HOME", &state),
                ("CODE_EXECUTOR_CACHE_DIR", &cache),
                ("HOME", &user_home),
                // pyenv's python3 under /root is not the normal user's to run.
                ("CODE_EXECUTOR_PYTHON", "/usr/bin/python3.11"),
            ],
        )
        .await,
    )
}

/// A server run by a normal user reads that user's own 0700 directory and 0600 files (the
/// sandbox is that user on the host), also below a 0700 parent; a 0600 file of root's it
/// cannot read on the host either fails with that true cause; write grants work.
#[tokio::test]
async fn a_normal_user_reads_the_directories_it_owns() {
    let s = Shapes::new();
    let home = TempDir::new("grants-user");
    if !nix::unistd::geteuid().is_root() {
        test_support::skip_loudly("needs root to start the server as another (normal) user");
        return;
    }
    // tmp/ and locked/ (all inside) become the user's; root600.txt stays root's.
    for rel in [
        "tmp",
        "tmp/data.txt",
        "tmp/sub",
        "tmp/sub/inner.txt",
        "locked",
        "locked/deep",
        "locked/deep/d.txt",
    ] {
        nix::unistd::chown(
            &s.base.0.join(rel),
            Some(NORMAL_USER.into()),
            Some(NORMAL_USER.into()),
        )
        .unwrap();
    }
    let Some((h, _d)) = server_as_normal_user(&s.base.0, &home.0).await else {
        return;
    };
    let grants = json!({"read": [s.path("tmp"), s.path("locked/deep"), s.path("root600.txt")]});
    for lang in BOTH {
        for (rel, text) in [
            ("tmp/data.txt", "tmp data\n"),
            ("tmp/sub/inner.txt", "inner\n"),
            ("locked/deep/d.txt", "deep\n"),
        ] {
            let v = ok(&h, lang, &read_code(lang, &s.path(rel)), grants.clone()).await;
            assert_eq!(v, text, "{lang:?}: {rel}");
        }
        let (_, msg) = fails(
            &h,
            lang,
            &read_code(lang, &s.path("root600.txt")),
            grants.clone(),
        )
        .await;
        assert!(
            msg.contains("the file permissions refuse the sandbox") && !msg.contains("writable"),
            "{lang:?}: {msg}"
        );
        let code = lang.pick(
            "await fs.writeFile('a.txt', 'hello'); return await fs.readFile('a.txt', 'utf8');",
            "open('a.txt', 'w').write('hello')\nopen('a.txt').read()",
        );
        let v = ok(&h, lang, code, json!({"write": true})).await;
        assert_eq!(v, "hello", "{lang:?}");
    }
}
