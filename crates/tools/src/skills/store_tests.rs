//! Tests of `store`.

use serde_json::json;

use super::super::skill::SkillLanguage;
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
    let held = Skills::new(&settings, Some(project), Err(&"the project is not trusted"));
    let e = held.find("project/dup").unwrap_err().to_string();
    assert!(e.contains("not trusted"), "{e}");
}

/// A user directory with one good skill (`fine`), plus what `plant` puts next to it.
fn with_odd_entry(plant: impl FnOnce(&Path)) -> (PathBuf, Skills) {
    let tmp = tempdir();
    let skills = store(&tmp);
    skills.save(request("fine", "return 1")).unwrap();
    plant(&tmp.join("user"));
    (tmp, skills)
}

/// The skill `fine` still lists, `odd` does not, and one problem names it saying `says`.
fn reported_alone(skills: &Skills, odd: &str, says: &str) {
    let (all, problems) = skills.list();
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fine"], "{problems:?}");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains(odd) && problems[0].contains(says),
        "{odd}: {problems:?}"
    );
    assert_eq!(skills.find("fine").unwrap().name, "fine");
}

/// A `SKILL.md` of a skill named `name`, runnable in Python.
fn skill_md_text(name: &str, description: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\nmetadata:\n  \
             code-executor-mcp/language: python\n---\n"
    )
}

/// A secret file outside every root, and a skill directory `name` under `root` whose
/// `SKILL.md` is a link to a frontmatter outside.
fn outside(tmp: &Path) -> PathBuf {
    let out = tmp.join("outside");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("secret.txt"), "TOP-SECRET").unwrap();
    std::fs::write(
        out.join("SKILL.md"),
        skill_md_text("linked", "OUTSIDE FRONTMATTER"),
    )
    .unwrap();
    out
}

#[test]
fn a_symlinked_skill_md_is_refused_never_its_targets_frontmatter() {
    let (tmp, skills) = with_odd_entry(|_| {});
    let out = outside(&tmp);
    let linked = tmp.join("user/linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(out.join("SKILL.md"), linked.join(SKILL_FILE)).unwrap();
    reported_alone(&skills, "linked/SKILL.md", "symbolic link");
    let e = skills.find("linked").unwrap_err().to_string();
    assert!(e.contains("symbolic link") && !e.contains("OUTSIDE"), "{e}");
}

#[test]
fn a_symlinked_skill_directory_is_skipped() {
    let (tmp, skills) = with_odd_entry(|_| {});
    let out = outside(&tmp);
    std::os::unix::fs::symlink(&out, tmp.join("user/linked")).unwrap();
    reported_alone(&skills, "linked", "symbolic link");
    assert!(
        skills
            .find("linked")
            .unwrap_err()
            .to_string()
            .contains("symbolic link")
    );
}

#[test]
fn a_symlinked_script_is_never_read() {
    let (tmp, skills) = with_odd_entry(|_| {});
    let out = outside(&tmp);
    let script = tmp.join("user/fine/skill.ts");
    std::fs::remove_file(&script).unwrap();
    std::os::unix::fs::symlink(out.join("secret.txt"), &script).unwrap();
    let e = skills
        .find("fine")
        .unwrap()
        .script_source()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("symbolic link") && !e.contains("TOP-SECRET"),
        "{e}"
    );
}

#[test]
fn a_symlinked_tools_json_is_never_read() {
    let (tmp, skills) = with_odd_entry(|_| {});
    let out = outside(&tmp);
    std::fs::write(
        out.join("tools.json"),
        r#"{"fx": {"echo": {"leak": true}}}"#,
    )
    .unwrap();
    let tools = tmp.join("user/fine").join(TOOLS_FILE);
    std::fs::remove_file(&tools).unwrap();
    std::os::unix::fs::symlink(out.join("tools.json"), &tools).unwrap();
    assert!(CodeSkill::saved_schemas(&skills.find("fine").unwrap()).is_empty());
}

#[test]
fn a_projects_linked_skills_directory_is_not_followed() {
    let tmp = tempdir();
    let out = outside(&tmp);
    let linked = out.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::copy(out.join("SKILL.md"), linked.join("SKILL.md")).unwrap();
    let project = tmp.join("project/.code-executor");
    std::fs::create_dir_all(&project).unwrap();
    std::os::unix::fs::symlink(&out, project.join("skills")).unwrap();
    let skills = Skills::new(
        &SkillSettings {
            dir: Some(tmp.join("user")),
            ..Default::default()
        },
        Some(tmp.join("project").join(PROJECT_SKILLS)),
        Ok(()),
    );
    let (all, problems) = skills.list();
    assert!(all.is_empty(), "{all:?}");
    assert!(problems[0].contains("symbolic link"), "{problems:?}");
    assert!(skills.find("project/linked").is_err());
}

#[test]
fn a_dangling_link_is_reported_alone() {
    let (_tmp, skills) = with_odd_entry(|u| {
        std::os::unix::fs::symlink("/nonexistent/x", u.join("dangling")).unwrap();
    });
    reported_alone(&skills, "dangling", "symbolic link");
}

#[test]
fn a_fifo_is_reported_alone_and_never_opened() {
    let (_tmp, skills) = with_odd_entry(|u| {
        nix::unistd::mkfifo(&u.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    });
    reported_alone(&skills, "pipe", "a fifo");
}

#[test]
fn a_fifo_named_skill_md_is_never_opened() {
    let (_tmp, skills) = with_odd_entry(|u| {
        std::fs::create_dir_all(u.join("piped")).unwrap();
        nix::unistd::mkfifo(&u.join("piped/SKILL.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    });
    reported_alone(&skills, "piped/SKILL.md", "a fifo");
}

#[test]
fn a_skill_md_that_is_a_directory_is_reported_alone() {
    let (_tmp, skills) = with_odd_entry(|u| {
        std::fs::create_dir_all(u.join("odd/SKILL.md")).unwrap();
    });
    reported_alone(&skills, "odd/SKILL.md", "a directory");
}

#[test]
fn a_file_where_a_skill_directory_belongs_is_reported_alone() {
    let (_tmp, skills) = with_odd_entry(|u| {
        std::fs::write(u.join("stray.md"), "x").unwrap();
    });
    reported_alone(&skills, "stray.md", "not a skill's directory");
}

#[test]
fn a_directory_without_skill_md_is_reported_alone() {
    let (_tmp, skills) = with_odd_entry(|u| {
        std::fs::create_dir_all(u.join("empty")).unwrap();
    });
    reported_alone(&skills, "empty", "no SKILL.md");
}

#[test]
fn a_name_that_is_not_utf8_is_reported_alone() {
    use std::os::unix::ffi::OsStrExt;
    let (_tmp, skills) = with_odd_entry(|u| {
        let name = std::ffi::OsStr::from_bytes(b"bad-\xff-name");
        std::fs::create_dir_all(u.join(name)).unwrap();
    });
    reported_alone(&skills, "bad-", "not UTF-8");
}

#[test]
fn bad_frontmatter_is_reported_alone() {
    let (_tmp, skills) = with_odd_entry(|u| {
        std::fs::create_dir_all(u.join("broken")).unwrap();
        std::fs::write(u.join("broken/SKILL.md"), "---\nname: [\n---\n").unwrap();
    });
    reported_alone(&skills, "broken/SKILL.md", "not valid YAML");
}

#[test]
fn a_huge_skill_md_is_refused_unread() {
    let (_tmp, skills) = with_odd_entry(|u| {
        std::fs::create_dir_all(u.join("huge")).unwrap();
        let f = std::fs::File::create(u.join("huge/SKILL.md")).unwrap();
        // Sparse: 4 GiB said, nothing written.
        f.set_len(4 << 30).unwrap();
    });
    reported_alone(&skills, "huge/SKILL.md", "more than the 1048576");
}

#[test]
fn an_unreadable_skill_md_is_reported_alone() {
    use std::os::unix::fs::PermissionsExt;
    if nix::unistd::geteuid().is_root() {
        return; // root reads any file: nothing to test
    }
    let (_tmp, skills) = with_odd_entry(|u| {
        std::fs::create_dir_all(u.join("locked")).unwrap();
        std::fs::write(u.join("locked/SKILL.md"), skill_md_text("locked", "d")).unwrap();
        std::fs::set_permissions(
            u.join("locked/SKILL.md"),
            std::fs::Permissions::from_mode(0o000),
        )
        .unwrap();
    });
    reported_alone(&skills, "locked/SKILL.md", "ermission denied");
}

/// Plants `break_it` into an owned skill's `SKILL.md`, then checks nobody saves over it.
fn nobody_saves_over(break_it: impl FnOnce(&Path)) {
    let tmp = tempdir();
    let skills = store(&tmp);
    let mut alice = request("report", "return 1");
    alice.owner = Some("token:alice".into());
    skills.save(alice.clone()).unwrap();
    break_it(&tmp.join("user/report"));
    for who in [
        Some("token:alice".to_string()),
        Some("token:bob".into()),
        None,
    ] {
        let mut r = request("report", "return 'evil'");
        r.owner = who.clone();
        let e = skills.save(r).unwrap_err().to_string();
        assert!(e.contains("nobody may save over it"), "{who:?}: {e}");
    }
    // Nothing was written over it, and a call of it fails too.
    let script = std::fs::read_to_string(tmp.join("user/report/skill.ts")).unwrap();
    assert_eq!(script, "return 1");
    assert!(skills.find("report").is_err());
}

#[test]
fn an_owner_that_cannot_be_read_from_a_huge_skill_md_refuses_saves() {
    nobody_saves_over(|d| {
        let mut md = std::fs::read_to_string(d.join(SKILL_FILE)).unwrap();
        md.push_str(&"enum value, ".repeat(120_000));
        std::fs::write(d.join(SKILL_FILE), md).unwrap();
    });
}

#[test]
fn an_owner_behind_a_link_refuses_saves() {
    nobody_saves_over(|d| {
        let real = d.with_file_name("real-skill-md");
        std::fs::rename(d.join(SKILL_FILE), &real).unwrap();
        std::os::unix::fs::symlink(&real, d.join(SKILL_FILE)).unwrap();
    });
}

#[test]
fn an_owner_in_unparsable_frontmatter_refuses_saves() {
    nobody_saves_over(|d| {
        let md = std::fs::read_to_string(d.join(SKILL_FILE)).unwrap();
        std::fs::write(d.join(SKILL_FILE), md.replacen("---\n", "---\n: [\n", 1)).unwrap();
    });
}

#[test]
fn an_owner_that_is_not_a_string_refuses_saves() {
    nobody_saves_over(|d| {
        let md = std::fs::read_to_string(d.join(SKILL_FILE)).unwrap();
        let md = md.replace(
            "\"code-executor-mcp/owner\": \"token:alice\"",
            "\"code-executor-mcp/owner\": [1]",
        );
        assert!(md.contains("[1]"));
        std::fs::write(d.join(SKILL_FILE), md).unwrap();
    });
}

#[test]
fn an_owner_of_a_missing_skill_md_refuses_saves() {
    nobody_saves_over(|d| std::fs::remove_file(d.join(SKILL_FILE)).unwrap());
}

/// A save of `req` fails naming `field` and `limit`.
fn refused(skills: &Skills, req: SaveRequest, field: &str, limit: &str) {
    let e = skills.save(req).unwrap_err().to_string();
    assert!(e.contains(field) && e.contains(limit), "{field}: {e}");
}

#[test]
fn an_input_schema_past_its_bound_is_refused() {
    let tmp = tempdir();
    let skills = store(&tmp);
    let mut r = request("big-schema", "return 1");
    let values: Vec<String> = (0..200_000).map(|i| format!("v{i}")).collect();
    r.input_schema = Some(json!({"type": "object", "properties": {"a": {"enum": values}}}));
    refused(
        &skills,
        r,
        "inputSchema",
        &MAX_INPUT_SCHEMA_BYTES.to_string(),
    );
    assert!(skills.list().0.is_empty());
}

#[test]
fn an_input_schema_that_pretty_prints_past_the_skill_md_bound_is_refused() {
    let tmp = tempdir();
    let skills = store(&tmp);
    let mut r = request("deep-schema", "return 1");
    // Under the schema's own bound compactly, far past SKILL.md's once indented.
    let mut v = json!((0..6000).collect::<Vec<_>>());
    for _ in 0..100 {
        v = json!([v]);
    }
    r.input_schema = Some(json!({"type": "object", "default": v}));
    refused(&skills, r, "SKILL.md", &MAX_SKILL_FILE.to_string());
}

#[test]
fn code_past_its_bound_is_refused() {
    let tmp = tempdir();
    let skills = store(&tmp);
    let r = request("big-code", &"x".repeat(MAX_SCRIPT_BYTES + 1));
    refused(&skills, r, "code", &MAX_SCRIPT_BYTES.to_string());
}

#[test]
fn a_description_past_its_bound_is_refused() {
    let tmp = tempdir();
    let skills = store(&tmp);
    let mut r = request("big-description", "return 1");
    r.description = "d".repeat(MAX_DESCRIPTION + 1);
    refused(&skills, r, "description", &MAX_DESCRIPTION.to_string());
}

#[test]
fn a_name_past_its_bound_is_refused() {
    let tmp = tempdir();
    let skills = store(&tmp);
    refused(&skills, request(&"n".repeat(65), "return 1"), "name", "64");
}

#[test]
fn an_owner_past_its_bound_is_refused() {
    let tmp = tempdir();
    let skills = store(&tmp);
    let mut r = request("long-owner", "return 1");
    r.owner = Some(format!("token:{}", "a".repeat(MAX_OWNER)));
    refused(&skills, r, "owner", &MAX_OWNER.to_string());
}

#[test]
fn too_many_recorded_tools_are_refused() {
    let tmp = tempdir();
    let skills = store(&tmp);
    let mut r = request("many-tools", "return 1");
    let tools: BTreeMap<String, Value> = (0..=MAX_TOOLS_RECORDED)
        .map(|i| (format!("t{i}"), json!({"inputSchema": {"type": "object"}})))
        .collect();
    r.tools = BTreeMap::from([("fx".to_string(), tools)]);
    refused(
        &skills,
        r,
        "upstream tools",
        &MAX_TOOLS_RECORDED.to_string(),
    );
}

#[test]
fn huge_tool_schemas_are_not_kept_and_do_not_break_the_skill() {
    let tmp = tempdir();
    let skills = store(&tmp);
    let mut r = request("huge-tools", "return 1");
    let big = json!({"inputSchema": {"type": "object", "description": "x".repeat(2 << 20)}});
    r.tools = BTreeMap::from([(
        "fx".to_string(),
        BTreeMap::from([("echo".to_string(), big)]),
    )]);
    let saved = skills.save(r).unwrap();
    assert!(!tmp.join("user/huge-tools").join(TOOLS_FILE).exists());
    assert_eq!(saved.code.unwrap().tools["fx"].len(), 1);
}

fn small_room(tmp: &Path, room: Room) -> Skills {
    let mut skills = store(tmp);
    skills.room = room;
    skills
}

#[test]
fn one_owner_cannot_keep_more_than_its_count_of_skills() {
    let tmp = tempdir();
    let skills = small_room(
        &tmp,
        Room {
            skills_per_owner: 3,
            ..Room::default()
        },
    );
    for i in 0..3 {
        let mut r = request(&format!("s{i}"), "return 1");
        r.owner = Some("token:alice".into());
        skills.save(r).unwrap();
    }
    let mut r = request("s3", "return 1");
    r.owner = Some("token:alice".into());
    refused(&skills, r.clone(), "skills", "(3)");
    // Saving over one of hers still works; another owner has room of its own.
    r.name = "s0".into();
    skills.save(r.clone()).unwrap();
    r.name = "s3".into();
    r.owner = Some("token:bob".into());
    skills.save(r).unwrap();
}

#[test]
fn one_owners_bytes_count_every_kept_version() {
    let tmp = tempdir();
    let skills = small_room(
        &tmp,
        Room {
            bytes_per_owner: 40_000,
            ..Room::default()
        },
    );
    let code = format!("return '{}'", "x".repeat(9_000));
    let mut r = request("grows", &code);
    r.owner = Some("token:alice".into());
    // Each save keeps the previous one: the versions fill her room.
    let mut saved = 0;
    let e = loop {
        match skills.save(r.clone()) {
            Ok(_) => saved += 1,
            Err(e) => break e.to_string(),
        }
        assert!(saved < 10, "never refused");
    };
    assert!(saved >= 2, "{saved}");
    assert!(e.contains("token:alice") && e.contains("40000"), "{e}");
    // Another owner is not refused for hers.
    r.owner = Some("token:bob".into());
    r.name = "other".into();
    skills.save(r).unwrap();
}

#[test]
fn the_whole_store_is_bounded_whoever_saves() {
    let tmp = tempdir();
    let skills = small_room(
        &tmp,
        Room {
            store_bytes: 30_000,
            ..Room::default()
        },
    );
    let code = format!("return '{}'", "x".repeat(9_000));
    let e = (0..10)
        .find_map(|i| {
            let mut r = request(&format!("p{i}"), &code);
            r.owner = Some(format!("token:user{i}"));
            skills.save(r).err()
        })
        .expect("refused at some point")
        .to_string();
    assert!(e.contains("30000"), "{e}");
}

#[test]
fn a_planted_link_in_the_versions_path_is_not_written_through() {
    let tmp = tempdir();
    let skills = store(&tmp);
    skills.save(request("kept", "return 1")).unwrap();
    let out = tmp.join("outside-versions");
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&out, tmp.join("user").join(VERSIONS)).unwrap();
    let e = skills
        .save(request("kept", "return 2"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

#[test]
fn a_served_directory_that_cannot_be_opened_stops_no_other_skill() {
    let tmp = tempdir();
    std::fs::write(tmp.join("not-a-dir"), "x").unwrap();
    let skills = Skills::new(
        &SkillSettings {
            dir: Some(tmp.join("user")),
            serve: vec![tmp.join("not-a-dir")],
            ..Default::default()
        },
        None,
        Ok(()),
    );
    skills.save(request("fine", "return 1")).unwrap();
    assert_eq!(skills.find("fine").unwrap().name, "fine");
    let (all, problems) = skills.list();
    assert_eq!(all.len(), 1, "{problems:?}");
    assert!(
        problems.len() == 1 && problems[0].contains("not-a-dir"),
        "{problems:?}"
    );
}

fn tempdir() -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("cem-skills-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
