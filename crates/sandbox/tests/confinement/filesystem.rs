//! Attacks on the filesystem view and /proc: each must fail under Enforce; where cheap, the
//! same payload succeeds under Disabled, which shows the test can fail.
use crate::common::*;
use sandbox::SandboxMode::{Disabled, Enforce};

#[test]
fn read_etc_shadow() {
    if skip_unless_sandbox_available() || skip_unless_exists("/etc/shadow") {
        return;
    }
    let fx = Fixture::new("shadow");
    let payload = python("attempt(lambda: len(open('/etc/shadow').read()))");
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED ENOENT"], "{confined:?}");
    let open = run(&payload, &fx.policy(Disabled));
    assert!(open.stdout.starts_with("OK"), "{open:?}");
}

#[test]
fn read_file_planted_in_home_outside_view() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("home");
    let payload = python(&format!(
        "attempt(lambda: open({:?}).read())",
        fx.secret.display().to_string()
    ));
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED ENOENT"], "{confined:?}");
    assert!(!confined.stdout.contains(SECRET));
    let open = run(&payload, &fx.policy(Disabled));
    assert_eq!(open.lines(), [format!("OK {SECRET}")], "{open:?}");
}

#[test]
fn list_host_processes_in_proc() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("proclist");
    let payload = python("print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))");
    let confined = run(&payload, &fx.policy(Enforce));
    // The namespace's init (1) and the payload (2) only.
    assert_eq!(confined.lines(), ["[1, 2]"], "{confined:?}");
    let open = run(&payload, &fx.policy(Disabled));
    let visible = open.stdout.matches(',').count() + 1;
    assert!(
        visible > 2,
        "unconfined should see host processes: {open:?}"
    );
}

#[test]
fn read_proc_environ_of_host_processes() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("environ");
    let host = std::process::id();
    // The test process itself is a host process; /proc/1 inside is the sandbox's own init,
    // whose environment the payload may not even read (init keeps capabilities the payload
    // dropped, so the kernel's ptrace-read check refuses), though its command line is public.
    let payload = python(&format!(
        "attempt(lambda: open('/proc/{host}/environ','rb').read()[:40])\n\
         attempt(lambda: open('/proc/1/environ','rb').read())\n\
         attempt(lambda: open('/proc/1/cmdline','rb').read().split(b'\\0')[1])"
    ));
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(
        confined.lines(),
        ["BLOCKED ENOENT", "BLOCKED EACCES", "OK b'__sandbox'"],
        "{confined:?}"
    );
    let open = run(&payload, &fx.policy(Disabled));
    assert!(open.lines()[0].starts_with("OK b'"), "{open:?}");
}

#[test]
fn write_outside_scratch() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("write");
    let target = fx.home.path().join("planted");
    let payload = python(&format!(
        "attempt(lambda: open({:?}, 'w').write('x'))\n\
         attempt(lambda: open('/usr/lib/planted-by-sandbox', 'w').write('x'))\n\
         attempt(lambda: open('/planted', 'w').write('x'))\n\
         attempt(lambda: os.mkdir('/dev/planted'))",
        target.display().to_string()
    ));
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(
        confined.lines(),
        [
            "BLOCKED ENOENT",
            "BLOCKED EROFS",
            "BLOCKED EROFS",
            "BLOCKED EROFS"
        ],
        "{confined:?}"
    );
    assert!(!target.exists());
    assert!(!std::path::Path::new("/usr/lib/planted-by-sandbox").exists());
    let open = run(
        &python(&format!(
            "attempt(lambda: open({:?}, 'w').write('x'))",
            target.display().to_string()
        )),
        &fx.policy(Disabled),
    );
    assert_eq!(open.lines(), ["OK 1"], "{open:?}");
    assert!(target.exists());
}

#[test]
fn symlink_from_scratch_to_host_file() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("symlink");
    let secret = fx.secret.display().to_string();
    let payload = python(&format!(
        "link = os.path.join(os.getcwd(), 'link')\n\
         attempt(lambda: os.symlink({secret:?}, link))\n\
         attempt(lambda: open(link).read())\n\
         attempt(lambda: os.link({PYTHON:?}, os.path.join(os.getcwd(), 'hard')))"
    ));
    let confined = run(&payload, &fx.policy(Enforce));
    // The link is made (scratch is writable) but points into nothing; hard links across mounts
    // are refused.
    assert_eq!(
        confined.lines(),
        ["OK None", "BLOCKED ENOENT", "BLOCKED EXDEV"],
        "{confined:?}"
    );
    let mut unconfined = fx.policy(Disabled);
    unconfined.scratch_dir = None;
    let open_payload = python(&format!(
        "link = os.path.join({:?}, 'link2')\n\
         attempt(lambda: os.symlink({secret:?}, link))\n\
         attempt(lambda: open(link).read())",
        fx.scratch.path().display().to_string()
    ));
    let open = run(&open_payload, &unconfined);
    assert_eq!(
        open.lines(),
        ["OK None", &format!("OK {SECRET}")],
        "{open:?}"
    );
}

#[test]
fn symlink_planted_by_host_in_scratch_to_host_file() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("planted-link");
    std::os::unix::fs::symlink(&fx.secret, fx.scratch.path().join("planted")).unwrap();
    let payload = python("attempt(lambda: open('planted').read())");
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED ENOENT"], "{confined:?}");
}

#[test]
fn scratch_is_the_only_writable_place() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("scratch");
    let payload = python(
        "open('out.txt', 'w').write('hello')\n\
         print(os.getcwd() == os.environ.get('EXPECTED_CWD'), open('out.txt').read())\n\
         attempt(lambda: open('/tmp/x', 'w'))",
    );
    let mut payload = payload;
    payload.env.push((
        "EXPECTED_CWD".into(),
        fx.scratch.path().as_os_str().to_owned(),
    ));
    let confined = run(&payload, &fx.policy(Enforce));
    assert!(confined.status.success(), "{confined:?}");
    // /tmp exists inside only as the read-only parent of the scratch dir.
    assert_eq!(
        confined.lines(),
        ["True hello", "BLOCKED EROFS"],
        "{confined:?}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.scratch.path().join("out.txt")).unwrap(),
        "hello"
    );
}

#[test]
fn scratch_mounted_at_another_path_is_there_and_its_host_path_is_not() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("scratch-at");
    let host = fx.scratch.path().display().to_string();
    let payload = python(&format!(
        "open('out.txt', 'w').write('hi')\n\
         print(os.getcwd(), sorted(os.listdir('/work/space')), os.path.exists({host:?}))\n\
         attempt(lambda: open('/work/x', 'w'))\n\
         attempt(lambda: os.execv('/work/space/out.txt', ['x']))"
    ));
    let mut policy = fx.policy(Enforce);
    policy.scratch_mount_at = Some("/work/space".into());
    let confined = run(&payload, &policy);
    assert!(confined.status.success(), "{confined:?}");
    assert_eq!(
        confined.lines(),
        [
            "/work/space ['out.txt'] False",
            "BLOCKED EROFS",
            "BLOCKED EACCES"
        ],
        "{confined:?}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.scratch.path().join("out.txt")).unwrap(),
        "hi"
    );
    // Unconfined, the scratch directory is simply the working directory at its host path.
    let unconfined = run(
        &python("print(os.getcwd())"),
        &sandbox::SandboxPolicy {
            mode: Disabled,
            ..policy.clone()
        },
    );
    assert_eq!(
        unconfined.lines(),
        [std::fs::canonicalize(fx.scratch.path())
            .unwrap()
            .display()
            .to_string()],
        "{unconfined:?}"
    );
    // A mount point that is not a plain absolute path is refused before anything starts.
    for bad in ["work", "/", "/work/../etc"] {
        policy.scratch_mount_at = Some(bad.into());
        let err = sandbox::command(&python("pass"), &policy).unwrap_err();
        assert!(
            err.to_string().contains("scratch mount point"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn executing_a_file_written_to_scratch() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("exec");
    let payload = python(
        "open('run.sh', 'w').write('#!/bin/sh\\necho pwned\\n')\n\
         os.chmod('run.sh', 0o755)\n\
         attempt(lambda: os.execv(os.path.abspath('run.sh'), ['run.sh']))",
    );
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EACCES"], "{confined:?}");
}

#[test]
fn environment_is_exactly_the_given_one_and_only_stdio_is_inherited() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("env");
    let payload =
        python("print(sorted(os.environ.items()))\nprint(sorted(os.listdir('/proc/self/fd')))");
    for mode in [Enforce, Disabled] {
        let out = run(&payload, &fx.policy(mode));
        assert_eq!(
            out.lines(),
            [
                "[('LC_ALL', 'C.UTF-8'), ('PATH', '/usr/bin:/bin')]",
                // 0, 1, 2 and the descriptor listdir itself holds open.
                "['0', '1', '2', '3']",
            ],
            "{mode:?}: {out:?}"
        );
    }
}

#[test]
fn unreachable_read_only_path_fails_closed() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("unreachable");
    // A directory the sandbox's uid cannot traverse: the view cannot be built, so nothing runs.
    let private = fx.home.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::create_dir(private.join("inner")).unwrap();
    std::fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    if nix::unistd::geteuid().as_raw() != 0 {
        skip_loudly("needs root to make a path the sandbox uid cannot traverse");
        return;
    }
    let mut policy = fx.policy(Enforce);
    policy.read_only_paths.push(private.join("inner"));
    let out = run(&sh("echo ran"), &policy);
    assert_eq!(
        out.status.code(),
        Some(i32::from(sandbox::EXIT_SETUP_FAILED)),
        "{out:?}"
    );
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("layer `filesystem-view`"), "{out:?}");
}

#[test]
fn a_data_path_is_readable_but_neither_writable_nor_executable() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("data");
    let home = fx.home.path().display().to_string();
    let script = fx.home.path().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho pwned\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut policy = fx.policy(Enforce);
    policy.data_paths = vec![fx.home.path().to_owned()];
    let payload = python(&format!(
        "attempt(lambda: open({secret:?}).read())\n\
         attempt(lambda: open('{home}/new', 'w'))\n\
         attempt(lambda: os.execv('{home}/run.sh', ['run.sh']))",
        secret = fx.secret.display().to_string(),
    ));
    let confined = run(&payload, &policy);
    assert_eq!(
        confined.lines(),
        [
            &format!("OK {SECRET}")[..],
            "BLOCKED EROFS",
            "BLOCKED EACCES"
        ],
        "{confined:?}"
    );
    assert!(!fx.home.path().join("new").exists());
}

#[test]
fn a_data_path_swapped_for_a_symlink_is_refused() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("dataswap");
    // The host granted `link` as if it were a directory; it is a symlink to the home now.
    let link = fx.scratch.path().join("link");
    std::os::unix::fs::symlink(fx.home.path(), &link).unwrap();
    let mut policy = fx.policy(Enforce);
    policy.data_paths = vec![link.clone()];
    let payload = python(&format!(
        "attempt(lambda: open({:?}).read())",
        link.join("credentials").display().to_string()
    ));
    let confined = run(&payload, &policy);
    assert!(!confined.stdout.contains(SECRET), "{confined:?}");
    assert!(confined.stderr.contains("is a symlink"), "{confined:?}");
}

/// As root, the sandbox runs as uid 65534: a grant of root's 0700 directory (tempfile's
/// default), of a 0600 file, of a path below a 0700 directory, or of a file of another uid,
/// was bound but could not be read (EACCES), or failed the view. Root opens them and the view
/// shows them id-mapped: each reads as its owner would, and nothing else changes.
#[test]
fn data_paths_only_root_could_read_are_readable_when_root_grants_them() {
    use std::os::unix::fs::PermissionsExt;
    if skip_unless_sandbox_available() {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        skip_loudly("needs root: the grants of this test are of paths only root can read");
        return;
    }
    let fx = Fixture::new("rootdata");
    let home = fx.home.path();
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
    };
    let write = |p: &std::path::Path, text: &str, m: u32| {
        std::fs::write(p, text).unwrap();
        mode(p, m);
    };
    // private/ 0700 root: data.txt 0600, sub/ 0700 with inner.txt, other.txt of uid 1234 0600.
    let private = home.join("private");
    std::fs::create_dir_all(private.join("sub")).unwrap();
    write(&private.join("data.txt"), "private data", 0o600);
    write(&private.join("sub/inner.txt"), "inner", 0o644);
    write(&private.join("other.txt"), "someone else's", 0o600);
    nix::unistd::chown(&private.join("other.txt"), Some(1234.into()), None).unwrap();
    // ... and sub/theirs.txt of uid 1234 0600, granted by its own path below the grant of
    // private/: its own tree, mapped for its own owner.
    let theirs = private.join("sub/theirs.txt");
    write(&theirs, "granted by itself", 0o600);
    nix::unistd::chown(&theirs, Some(1234.into()), None).unwrap();
    mode(&private.join("sub"), 0o700);
    mode(&private, 0o700);
    // locked/ 0700 with deep/ 0755 inside: deep is granted, locked is not.
    let deep = home.join("locked/deep");
    std::fs::create_dir_all(&deep).unwrap();
    write(&deep.join("f.txt"), "deep", 0o644);
    mode(&home.join("locked"), 0o700);
    // A 0600 file of root's, and one of uid 1234's, each granted by itself.
    let root_file = home.join("root600.txt");
    write(&root_file, "root's file", 0o600);
    let their_file = home.join("their600.txt");
    write(&their_file, "uid 1234's file", 0o600);
    nix::unistd::chown(&their_file, Some(1234.into()), Some(1234.into())).unwrap();
    // A 0700 directory beside them, never granted.
    let beside = home.join("beside");
    std::fs::create_dir(&beside).unwrap();
    write(&beside.join("x.txt"), "not granted", 0o644);
    mode(&beside, 0o700);

    let mut policy = fx.policy(Enforce);
    policy.data_paths = vec![
        private.clone(),
        deep.clone(),
        root_file.clone(),
        their_file.clone(),
        theirs.clone(),
    ];
    let p = |path: &std::path::Path| path.display().to_string();
    let payload = python(&format!(
        "attempt(lambda: open('{private}/data.txt').read())\n\
         attempt(lambda: open('{private}/sub/inner.txt').read())\n\
         attempt(lambda: sorted(os.listdir('{private}')))\n\
         attempt(lambda: open('{deep}/f.txt').read())\n\
         attempt(lambda: open('{root_file}').read())\n\
         attempt(lambda: open('{their_file}').read())\n\
         attempt(lambda: open('{private}/other.txt').read())\n\
         attempt(lambda: open('{theirs}').read())\n\
         attempt(lambda: open('{private}/new', 'w'))\n\
         attempt(lambda: open('{private}/data.txt', 'a'))\n\
         attempt(lambda: os.chmod('{private}/data.txt', 0o666))\n\
         attempt(lambda: os.listdir('{beside}'))\n\
         attempt(lambda: open({secret:?}).read())\n\
         attempt(lambda: os.stat('{private}').st_uid == os.getuid())",
        private = p(&private),
        deep = p(&deep),
        root_file = p(&root_file),
        their_file = p(&their_file),
        theirs = p(&theirs),
        beside = p(&beside),
        secret = p(&fx.secret),
    ));
    let confined = run(&payload, &policy);
    assert_eq!(
        confined.lines(),
        [
            "OK private data",
            "OK inner",
            "OK ['data.txt', 'other.txt', 'sub']",
            "OK deep",
            "OK root's file",
            "OK uid 1234's file",
            // A file of another owner inside a granted directory reads under its own bits.
            "BLOCKED EACCES",
            "OK granted by itself",
            "BLOCKED EROFS",
            "BLOCKED EROFS",
            "BLOCKED EROFS",
            "BLOCKED ENOENT",
            "BLOCKED ENOENT",
            "OK True",
        ],
        "{confined:?}"
    );
    assert!(!private.join("new").exists());
    assert_eq!(
        std::fs::metadata(private.join("data.txt"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}
