//! Skills through the built binary and a real MCP client: saved from code in both languages
//! (an Agent Skills directory a person can read and edit), versioned, found by
//! `search_tools` and `listSkills`, called from either language whatever the skill's own,
//! within the caller's allowed tools and time, flagged when an upstream tool changed under
//! them, and a project's skills held back until the project is trusted.

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig, TempDir, fixture_entry};

use crate::common::EXE;

/// A server whose skills live in `dir`.
async fn with_skills(dir: &std::path::Path, fx_env: Option<(&str, &str)>) -> (Harness, TempConfig) {
    let mut fx = fixture_entry("fx");
    if let Some((k, v)) = fx_env {
        fx["env"] = json!({ k: v });
    }
    Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fx }),
        &json!({"skills": {"dir": dir}}),
        &[],
    )
    .await
}

async fn ok(h: &Harness, lang: Lang, code: &str) -> Value {
    let (v, is_error) = h.run_tool(lang.tool(), json!({ "code": code })).await;
    assert!(!is_error, "{lang:?}: {code}\n{v}");
    v["result"].clone()
}

async fn fails(h: &Harness, lang: Lang, args: Value) -> Value {
    let (v, is_error) = h.run_tool(lang.tool(), args.clone()).await;
    assert!(is_error, "{lang:?}: {args}\n{v}");
    v["error"].clone()
}

const GREET_PY: &str = r#"echoed = tools.fx.echo(message="hello " + args["who"])
{"greeting": echoed, "lang": "python"}"#;

#[tokio::test]
async fn skills_are_saved_versioned_found_and_called_across_languages() {
    let dir = TempDir::new("skills");
    let (h, settings_dir) = with_skills(&dir.0, None).await;
    // Saved from TypeScript: a TypeScript skill with an input schema.
    let saved = ok(
        &h,
        Lang::Ts,
        r#"return await saveSkill('add-one', {code: 'const n: number = args.a; return {sum: n + 1, lang: "ts"}', description: 'Adds one to a number.', inputSchema: {type: 'object', properties: {a: {type: 'number'}}, required: ['a']}})"#,
    )
    .await;
    assert_eq!(saved["version"], 1, "{saved}");
    assert_eq!(saved["language"], "typescript");
    // Saved from Python: a Python skill that calls an upstream tool.
    let saved = ok(
        &h,
        Lang::Py,
        &format!(
            "save_skill('greet', {GREET_PY:?}, 'Greets someone through the echo tool.', {{'type': 'object', 'properties': {{'who': {{'type': 'string'}}}}}})"
        ),
    )
    .await;
    assert_eq!(saved["tools"], json!(["fx.echo"]), "{saved}");
    // Plain files: SKILL.md with the frontmatter, the script, the tools' schemas.
    let md = std::fs::read_to_string(dir.0.join("greet/SKILL.md")).unwrap();
    assert!(md.starts_with("---\nname: \"greet\"\n"), "{md}");
    assert!(
        md.contains("code-executor-mcp/tools") && md.contains("sha256:"),
        "{md}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.0.join("greet/skill.py")).unwrap(),
        GREET_PY
    );
    assert!(dir.0.join("greet/tools.json").is_file());
    // Called across languages, by name or identifier form.
    let r = ok(&h, Lang::Ts, "return await skills.greet({who: 'ts'})").await;
    assert_eq!(r, json!({"greeting": "Echo: hello ts", "lang": "python"}));
    let r = ok(&h, Lang::Py, "skills.add_one(a=41)").await;
    assert_eq!(r, json!({"sum": 42, "lang": "ts"}));
    let r = ok(
        &h,
        Lang::Py,
        "import asyncio\nawait askills['add-one']({'a': 1})",
    )
    .await;
    assert_eq!(r["sum"], 2);
    // Arguments are checked against the skill's schema.
    let e = fails(
        &h,
        Lang::Ts,
        json!({"code": "return await skills.add_one({a: 'x'})"}),
    )
    .await;
    assert_eq!(e["name"], "TypeError", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("arguments/a"),
        "{e}"
    );
    // Saving over a skill keeps the previous version.
    let again = ok(
        &h,
        Lang::Ts,
        "return await saveSkill('add-one', {code: 'return {sum: args.a + 100}', description: 'Adds a hundred.'})",
    )
    .await;
    assert_eq!(again["version"], 2, "{again}");
    assert_eq!(again["previousVersions"], json!([1]));
    assert!(dir.0.join(".versions/add-one/1/skill.ts").is_file());
    assert_eq!(
        ok(&h, Lang::Ts, "return (await skills.add_one({a: 1})).sum").await,
        101
    );
    // Found: listed in code, ranked by search_tools among the tools and marked as skills.
    let list = ok(&h, Lang::Py, "[s['name'] for s in list_skills()['skills']]").await;
    assert_eq!(list, json!(["add-one", "greet"]));
    let found = h
        .call(
            "search_tools",
            json!({"query": "greet someone", "detail": "summary"}),
        )
        .await;
    let found = found.structured_content.unwrap();
    let first = &found["tools"][0];
    assert_eq!(first["kind"], "skill", "{found}");
    assert_eq!(first["name"], "greet");
    assert_eq!(first["call"], "skills.greet(args)");
    // The command line's `tools search` ranks them the same way.
    let settings = settings_dir.dir.join("settings.json");
    let cli = |args: &[&str]| {
        let config = TempConfig::new(json!({ "fx": fixture_entry("fx") }));
        let out = std::process::Command::new(EXE)
            .arg("--config")
            .arg(&config.path)
            .arg("--no-discover")
            .args(args)
            .env("CODE_EXECUTOR_CONFIG_PATH", &settings)
            .env("XDG_STATE_HOME", config.dir.join("state"))
            .env("CODE_EXECUTOR_CACHE_DIR", config.dir.join("cache"))
            .current_dir(&config.dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let json_hits: Value = serde_json::from_str(&cli(&[
        "tools",
        "search",
        "greet someone",
        "--detail",
        "summary",
        "--json",
    ]))
    .unwrap();
    assert_eq!(json_hits["tools"][0], found["tools"][0], "{json_hits}");
    let text = cli(&["tools", "search", "greet someone"]);
    let mut lines = text.lines();
    let top = lines.next().unwrap_or("");
    assert!(
        top.starts_with("skill greet ") && top.ends_with("Greets someone through the echo tool."),
        "{text}"
    );
    assert_eq!(
        lines.next().map(str::trim),
        Some("skills.greet(args)"),
        "{text}"
    );
    let only = cli(&["tools", "search", "add", "--server", "skills"]);
    assert!(
        only.lines()
            .filter(|l| !l.starts_with(' ') && !l.starts_with('('))
            .all(|l| l.starts_with("skill ")),
        "{only}"
    );
    assert!(only.contains("skill add-one"), "{only}");
    let only = ok(
        &h,
        Lang::Ts,
        "return await searchTools('add', {server: 'skills'})",
    )
    .await;
    assert!(
        only["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["kind"] == "skill"),
        "{only}"
    );
    // Bad saves say what to fix.
    for (code, says) in [
        (
            "return await saveSkill('Bad Name', {code: '1', description: 'd'})",
            "Agent Skills rules",
        ),
        (
            "return await saveSkill('ok', {code: '1', description: ''})",
            "description",
        ),
        (
            "return await saveSkill('ok', {code: '1', description: 'd', language: 'ruby'})",
            "ruby",
        ),
        ("return await skills.nothing_here()", "no skill is named"),
    ] {
        let e = fails(&h, Lang::Ts, json!({ "code": code })).await;
        assert!(e["message"].as_str().unwrap().contains(says), "{code}: {e}");
    }
    // A client without code: `save` keeps code as a skill without running it (the tool's
    // language is the skill's), `skill` runs one.
    let (v, is_error) = h
        .run_tool(
            "execute_python",
            json!({"code": "raise SystemExit('not run at save')", "save": {"name": "stop", "description": "Stops."}}),
        )
        .await;
    assert!(!is_error && v["result"]["language"] == "python", "{v}");
    for lang in [Lang::Ts, Lang::Py] {
        let (v, is_error) = h
            .run_tool(lang.tool(), json!({"skill": "add-one", "args": {"a": 5}}))
            .await;
        assert!(!is_error && v["result"]["sum"] == 105, "{lang:?}: {v}");
        let (v, is_error) = h
            .run_tool(
                lang.tool(),
                json!({"skill": "greet", "args": {"who": "client"}}),
            )
            .await;
        assert!(
            !is_error && v["result"]["greeting"] == "Echo: hello client",
            "{lang:?}: {v}"
        );
    }
    let refused = h
        .client
        .peer()
        .call_tool(
            rmcp::model::CallToolRequestParams::new("execute_typescript").with_arguments(
                json!({"save": {"name": "x", "description": "d"}})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        )
        .await;
    let e = refused
        .expect_err("a save without code is refused")
        .to_string();
    assert!(e.contains("give `code`"), "{e}");
    // The audit log says which execution ran which skill, for whom.
    let audit = std::fs::read_to_string(h.audit_path()).unwrap();
    assert!(audit.contains("\"event\":\"skill.save\""), "{audit}");
    assert!(audit.contains("\"skill\":\"greet\",\"parent\":"), "{audit}");
}

#[tokio::test]
async fn a_skill_runs_within_what_its_caller_may_do() {
    let dir = TempDir::new("skills-limits");
    let (h, _c) = with_skills(&dir.0, None).await;
    ok(
        &h,
        Lang::Py,
        &format!("save_skill('greet', {GREET_PY:?}, 'Greets someone.')"),
    )
    .await;
    ok(
        &h,
        Lang::Ts,
        "return await saveSkill('slow', {code: 'await new Promise(r => setTimeout(r, 20000)); return 1', description: 'Takes twenty seconds.'})",
    )
    .await;
    ok(
        &h,
        Lang::Ts,
        "return await saveSkill('again', {code: 'return await skills.again({})', description: 'Calls itself.'})",
    )
    .await;
    // The caller's allowedTools bind the skill: echo is not among them.
    for lang in [Lang::Ts, Lang::Py] {
        let code = lang.pick(
            "return await skills.greet({who: 'x'})",
            "skills.greet(who='x')",
        );
        let e = fails(
            &h,
            lang,
            json!({"code": code, "allowedTools": ["mcp__fx__add"]}),
        )
        .await;
        // What a plain run with these allowedTools meets: a PolicyError naming them.
        let m = e["message"].as_str().unwrap();
        assert_eq!(e["name"], "PolicyError", "{lang:?}: {e}");
        assert!(
            m.contains("skill greet failed")
                && m.contains(
                    "mcp__fx__echo is not in this execution's allowedTools (mcp__fx__add)"
                ),
            "{lang:?}: {e}"
        );
    }
    // And its time: the skill has what is left of the caller's.
    let started = std::time::Instant::now();
    let e = fails(
        &h,
        Lang::Ts,
        json!({"code": "return await skills.slow({})", "timeoutMs": 1500}),
    )
    .await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{e}"
    );
    // The skill has exactly the caller's time left: which deadline is seen first (the
    // caller's own, or the skill's, which the caller then meets as a LimitError) is a race.
    let m = e["message"].as_str().unwrap_or_default();
    assert!(
        ["TimeoutError", "LimitError"].contains(&e["name"].as_str().unwrap_or_default())
            && m.contains("deadline"),
        "{e}"
    );
    // A skill calling itself stops at the depth bound.
    let e = fails(
        &h,
        Lang::Ts,
        json!({"code": "return await skills.again({})"}),
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().contains("at most 4 deep"),
        "{e}"
    );
    // Instructions-only skills (hand-written Agent Skills) are found, not called.
    std::fs::create_dir_all(dir.0.join("notes")).unwrap();
    std::fs::write(
        dir.0.join("notes/SKILL.md"),
        "---\nname: notes\ndescription: How this team writes release notes.\nlicense: MIT\n---\n# Notes\n",
    )
    .unwrap();
    let list = ok(
        &h,
        Lang::Ts,
        "return (await listSkills()).skills.find(s => s.name === 'notes')",
    )
    .await;
    assert_eq!(list["instructionsOnly"], true, "{list}");
    let e = fails(
        &h,
        Lang::Ts,
        json!({"code": "return await skills.notes({})"}),
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().contains("instructions only"),
        "{e}"
    );
}

#[tokio::test]
async fn a_skill_whose_upstream_tool_changed_is_flagged_with_what_changed() {
    let dir = TempDir::new("skills-changed");
    {
        let (h, _c) = with_skills(&dir.0, None).await;
        ok(
            &h,
            Lang::Py,
            &format!("save_skill('greet', {GREET_PY:?}, 'Greets someone.')"),
        )
        .await;
        let listed = ok(&h, Lang::Ts, "return (await listSkills()).skills[0]").await;
        assert!(listed.get("changed").is_none(), "{listed}");
    }
    // The upstream's new version: echo takes a required `loud` and has an output schema.
    let (h, _c) = with_skills(&dir.0, Some(("FIXTURE_ECHO_V2", "1"))).await;
    ok(&h, Lang::Ts, "return await tools.fx.add({a: 1, b: 2})").await; // connects fx
    let listed = ok(&h, Lang::Ts, "return (await listSkills()).skills[0]").await;
    let what = listed["changed"][0]["changed"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(listed["changed"][0]["tool"], "fx.echo", "{listed}");
    assert!(
        what.contains("`loud` added")
            && what.contains("now required: `loud`")
            && what.contains("output schema changed"),
        "{what}"
    );
    let found = h
        .call(
            "search_tools",
            json!({"query": "greets", "detail": "names"}),
        )
        .await;
    let found = found.structured_content.unwrap();
    assert_eq!(
        found["tools"][0]["changed"][0]["tool"], "fx.echo",
        "{found}"
    );
    // Called, it says so: the call fails on the new required argument, and the error names
    // the change.
    let e = fails(
        &h,
        Lang::Ts,
        json!({"code": "return await skills.greet({who: 'x'})"}),
    )
    .await;
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("fx.echo changed since the skill was saved"),
        "{e}"
    );
}

#[tokio::test]
async fn a_projects_skills_wait_until_the_project_is_trusted() {
    let project = TempDir::new("skills-project");
    let home = TempDir::new("skills-home");
    let skill = project.0.join(".code-executor/skills/deploy-notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy-notes\ndescription: Deploy notes.\nmetadata:\n  code-executor-mcp/language: typescript\n---\n",
    )
    .unwrap();
    std::fs::write(skill.join("skill.ts"), "return 'deployed ' + args.what").unwrap();
    for trusted in [false, true] {
        let settings = project.0.join(format!("settings-{trusted}.json"));
        let trust: Vec<&std::path::Path> = if trusted { vec![&project.0] } else { vec![] };
        std::fs::write(
            &settings,
            json!({"skills": {"dir": home.0.join("skills")}, "trustedProjects": trust}).to_string(),
        )
        .unwrap();
        let h = Harness::start_in(
            EXE.as_ref(),
            json!({ "fx": fixture_entry("fx") }),
            &[],
            &[
                ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
                ("HOME", home.0.to_str().unwrap()),
            ],
            &project.0,
        )
        .await;
        if trusted {
            let r = ok(&h, Lang::Py, "skills.deploy_notes(what='v2')").await;
            assert_eq!(r, "deployed v2");
            let list = ok(&h, Lang::Ts, "return (await listSkills()).skills[0].origin").await;
            assert_eq!(list, "project");
        } else {
            let e = fails(
                &h,
                Lang::Ts,
                json!({"code": "return await skills.deploy_notes({})"}),
            )
            .await;
            let m = e["message"].as_str().unwrap();
            assert!(
                m.contains("not trusted") && m.contains("trustedProjects"),
                "{m}"
            );
            let list = ok(&h, Lang::Ts, "return await listSkills()").await;
            assert_eq!(list["skills"], json!([]), "{list}");
            assert!(
                list["problems"][0].as_str().unwrap().contains("not read"),
                "{list}"
            );
        }
    }
}

/// Reads every file of every skill's manifest through `peer` and checks it against its digest
/// and size (as a host of the extension must); each manifest names its own `SKILL.md`, and a
/// read answers for the address asked. Returns the files' addresses.
async fn read_and_verify_every_file(
    peer: &rmcp::Peer<rmcp::RoleClient>,
    skills: &[rmcp::model::Skill],
) -> Vec<String> {
    use rmcp::model::{ReadResourceRequestParams, ResourceContents, SkillResources};
    let mut seen = Vec::new();
    for skill in skills {
        let SkillResources::Files(files) = &skill.resources else {
            panic!("{skill:?}")
        };
        assert!(files.iter().any(|f| f.uri == skill.uri), "{skill:?}");
        for f in files {
            let read = peer
                .read_resource(ReadResourceRequestParams::new(f.uri.clone()))
                .await
                .unwrap();
            let ResourceContents::TextResourceContents { uri, text, .. } = &read.contents[0] else {
                panic!("{read:?}")
            };
            assert_eq!(uri, &f.uri);
            f.verify(text.as_bytes())
                .unwrap_or_else(|e| panic!("{}: {e}", f.uri));
            seen.push(f.uri.clone());
        }
    }
    seen
}

/// What the MCP skills extension (SEP-2640) serves, read back by clients that use it: the
/// Rust reference SDK's skills wrappers over stdio (every file checked against its digest),
/// and raw JSON-RPC over streamable HTTP in both protocol generations.
#[tokio::test]
async fn skills_are_served_over_the_extension_to_both_protocol_generations() {
    use rmcp::model::{
        GetSkillRequestParams, ReadResourceDirectoryRequestParams, ReadResourceRequestParams,
    };
    use test_support::http::{Generation, HttpServer, McpHttp};

    let dir = TempDir::new("skills-served");
    let served = TempDir::new("skills-extra");
    // A hand-written Agent Skill in a served directory, with a nested file, a file whose name
    // needs escaping, and a symlink out of it that must never be served.
    let pdf = served.0.join("pdf-forms");
    std::fs::create_dir_all(pdf.join("templates/regional")).unwrap();
    std::fs::write(
        pdf.join("SKILL.md"),
        "---\nname: pdf-forms\ndescription: >\n  Fill PDF forms\n  from templates.\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1\"\n---\n# PDF forms\nPick a template in `templates/`.\n",
    )
    .unwrap();
    std::fs::write(
        pdf.join("templates/invoice form.md"),
        "Invoice: {{total}}\n",
    )
    .unwrap();
    std::fs::write(pdf.join("templates/regional/eu.md"), "EU\n").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", pdf.join("passwd")).unwrap();
    let settings = json!({"skills": {"dir": dir.0, "serve": [served.0]}});
    let (h, _c) = Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &settings,
        &[],
    )
    .await;
    ok(
        &h,
        Lang::Py,
        &format!("save_skill('greet', {GREET_PY:?}, 'Greets someone.')"),
    )
    .await;
    let peer = h.client.peer();
    let caps = &peer.peer_info().unwrap().capabilities;
    assert!(
        caps.supports_skills() && caps.supports_directory_read(),
        "{caps:?}"
    );
    assert!(
        caps.resources.is_some(),
        "the extension needs the resources capability"
    );
    let skills = peer.list_all_skills().await.unwrap();
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://user/greet/SKILL.md",
            "skill://served/pdf-forms/SKILL.md"
        ]
    );
    let files = read_and_verify_every_file(peer, &skills).await;
    assert!(
        !files.iter().any(|f| f.ends_with("/passwd")),
        "a symlink out of the skill: {files:?}"
    );
    // The frontmatter as written (the folded description, every other field).
    let pdf_entry = &skills[1];
    assert_eq!(
        pdf_entry.frontmatter.description,
        "Fill PDF forms from templates.\n"
    );
    assert_eq!(pdf_entry.frontmatter.extra["license"], "Apache-2.0");
    assert_eq!(pdf_entry.frontmatter.extra["metadata"]["version"], "2.1");
    let greet = &skills[0].frontmatter.extra["metadata"];
    assert_eq!(greet["code-executor-mcp/language"], "python", "{greet}");
    // skills/get, and its errors.
    let got = peer
        .get_skill(GetSkillRequestParams::new(
            "skill://served/pdf-forms/SKILL.md",
        ))
        .await
        .unwrap();
    assert_eq!(got.skill, skills[1]);
    for bad in [
        "skill://served/nope/SKILL.md",
        "skill://served/pdf-forms/templates/regional/eu.md",
        "skill://served/pdf-forms/../greet/SKILL.md",
    ] {
        let e = peer
            .get_skill(GetSkillRequestParams::new(bad))
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("-32602") || e.to_string().contains("Invalid params"),
            "{bad}: {e}"
        );
    }
    // Directories: the root, a subdirectory, its subdirectory.
    let root = peer
        .read_resource_directory(ReadResourceDirectoryRequestParams::new(
            "skill://served/pdf-forms",
        ))
        .await
        .unwrap();
    let names: Vec<(&str, Option<&str>)> = root
        .resources
        .iter()
        .map(|r| (r.name.as_str(), r.mime_type.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("SKILL.md", Some("text/markdown")),
            ("templates", Some("inode/directory"))
        ]
    );
    let templates = peer
        .read_resource_directory(ReadResourceDirectoryRequestParams::new(
            "skill://served/pdf-forms/templates",
        ))
        .await
        .unwrap();
    let uris: Vec<&str> = templates.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://served/pdf-forms/templates/invoice%20form.md",
            "skill://served/pdf-forms/templates/regional"
        ]
    );
    for bad in [
        "skill://served/pdf-forms/SKILL.md",
        "skill://served/pdf-forms/passwd",
        "skill://served/nope",
    ] {
        let e = peer
            .read_resource_directory(ReadResourceDirectoryRequestParams::new(bad))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{bad}: {e}");
    }
    let e = peer
        .read_resource(ReadResourceRequestParams::new(
            "skill://served/pdf-forms/passwd",
        ))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
    // A client without the extension reaches the same files as resources.
    let listed = peer.list_all_resources().await.unwrap();
    assert!(
        listed
            .iter()
            .any(|r| r.uri == "skill://served/pdf-forms/templates/regional/eu.md")
    );
    // Over streamable HTTP, in both protocol generations.
    let settings_file = dir.0.join("../settings-served.json");
    std::fs::write(&settings_file, settings.to_string()).unwrap();
    let s = HttpServer::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &[],
        &[("CODE_EXECUTOR_CONFIG_PATH", settings_file.to_str().unwrap())],
    )
    .await;
    for generation in [Generation::Sessions, Generation::Stateless] {
        let c = McpHttp::connect(&s.url, None, generation).await;
        let r = c.request("skills/list", json!({})).await;
        let v = r.messages.last().cloned().unwrap_or_default();
        let names: Vec<&str> = v["result"]["skills"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s["frontmatter"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(names, ["greet", "pdf-forms"], "{generation:?}: {v}");
        assert!(v["result"]["ttlMs"].is_u64(), "{v}");
        let r = c
            .request(
                "resources/read",
                json!({"uri": "skill://user/greet/skill.py"}),
            )
            .await;
        let v = r.messages.last().cloned().unwrap_or_default();
        assert_eq!(
            v["result"]["contents"][0]["text"], GREET_PY,
            "{generation:?}: {v}"
        );
    }
    let _ = std::fs::remove_file(settings_file);
}

/// An upstream that serves skills over the extension: its skills are found by `search_tools`
/// next to ours, named by their server, listed by our `skills/list` under
/// `skill://upstream/<server>/`, and read through us (every digest checks), never a file its
/// own listing does not name.
#[tokio::test]
async fn upstream_skills_are_found_and_read_through_us() {
    use rmcp::model::{GetSkillRequestParams, ReadResourceRequestParams};
    let dir = TempDir::new("skills-upstream");
    let (h, _c) = with_skills(&dir.0, Some(("FIXTURE_SKILLS", "1"))).await;
    ok(&h, Lang::Ts, "return await tools.fx.add({a: 1, b: 2})").await; // connects fx
    let found = h
        .call(
            "search_tools",
            json!({"query": "write release notes", "detail": "full"}),
        )
        .await
        .structured_content
        .unwrap();
    let hit = &found["tools"][0];
    assert_eq!(hit["kind"], "skill", "{found}");
    assert_eq!(hit["origin"], "upstream");
    assert_eq!(hit["server"], "fx");
    assert_eq!(hit["name"], "fx/release-notes");
    assert_eq!(hit["uri"], "skill://upstream/fx/release-notes/SKILL.md");
    let peer = h.client.peer();
    let skills = peer.list_all_skills().await.unwrap();
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://upstream/fx/release-notes/SKILL.md",
            "skill://upstream/fx/acme/triage/SKILL.md"
        ]
    );
    read_and_verify_every_file(peer, &skills).await;
    let got = peer
        .get_skill(GetSkillRequestParams::new(
            "skill://upstream/fx/acme/triage/SKILL.md",
        ))
        .await
        .unwrap();
    assert_eq!(got.skill.frontmatter.name, "triage");
    for bad in [
        "skill://upstream/fx/release-notes/secret.md",
        "skill://upstream/fx/../../etc/passwd",
        "skill://upstream/nope/release-notes/SKILL.md",
        // Decoded, then checked: every spelling of a step out.
        "skill://upstream/fx/release-notes/%2E%2E/%2E%2E/etc/passwd",
        "skill://upstream/fx/release-notes/.%2E/acme/triage/SKILL.md",
        "skill://upstream/fx/release-notes/%2e./acme/triage/SKILL.md",
        "skill://upstream/fx/release-notes/..",
        "skill://upstream/fx/release-notes/%252E%252E/x",
        "skill://upstream/fx/release-notes/..%2F..%2Fx",
        "skill://upstream/fx/release-notes/..%5C..%5Cx",
        "skill://upstream/fx/release-notes//SKILL.md",
        "skill://upstream/fx/release-notes/SKILL.md%00",
        "skill://upstream/%2E%2E/release-notes/SKILL.md",
    ] {
        let e = peer
            .read_resource(ReadResourceRequestParams::new(bad))
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("-32602") || e.to_string().contains("Invalid"),
            "{bad}: {e}"
        );
    }
}

// Trees on disk are untrusted (issue #50, part 2): links, odd entries, owners that cannot be
// told, unbounded fields. Each attack is also a unit test of its own beside the code
// (`skills::store`, `skills::beneath`, `skills::uri`, `upstream::skills`); these check what
// code in both languages and a client of the extension meet.

/// A served skill `name` in `dir` whose `SKILL.md` says it runs `language`.
fn served_skill(dir: &std::path::Path, name: &str, language: &str, description: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name).join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: {description}\nmetadata:\n  code-executor-mcp/language: {language}\n---\n"
        ),
    )
    .unwrap();
}

/// `listSkills()` / `list_skills()` in both languages: the names listed, and the problems.
async fn listed_in_both(h: &Harness) -> (Vec<String>, Vec<String>) {
    let ts = ok(h, Lang::Ts, "return await listSkills()").await;
    let py = ok(h, Lang::Py, "list_skills()").await;
    assert_eq!(ts, py);
    let names = ts["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    let problems = ts["problems"]
        .as_array()
        .map(|p| p.iter().map(|p| p.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    (names, problems)
}

/// Links under a served skill root are never followed: a linked script is never run, a
/// linked `SKILL.md` or skill directory never lists its target's frontmatter, a linked
/// resource is never served; in TypeScript, Python and over the extension.
#[tokio::test]
async fn links_under_a_skill_root_are_never_followed() {
    let dir = TempDir::new("skills-links-user");
    let served = TempDir::new("skills-links-served");
    let outside = TempDir::new("skills-links-outside");
    let o = &outside.0;
    std::fs::write(o.join("leak.py"), "'LEAKED-' + 'PY'").unwrap();
    std::fs::write(o.join("leak.ts"), "return 'LEAKED-' + 'TS'").unwrap();
    std::fs::write(o.join("secret.txt"), "TOP-SECRET").unwrap();
    std::fs::create_dir_all(o.join("linked-dir")).unwrap();
    std::fs::write(
        o.join("linked-dir/SKILL.md"),
        "---\nname: linked-dir\ndescription: OUTSIDE-DIR\nmetadata:\n  code-executor-mcp/language: python\n---\n",
    )
    .unwrap();
    std::fs::write(o.join("linked-dir/skill.py"), "'LEAKED-' + 'DIR'").unwrap();
    std::fs::write(
        o.join("md.md"),
        "---\nname: linked-md\ndescription: OUTSIDE-MD\nmetadata:\n  code-executor-mcp/language: python\n---\n",
    )
    .unwrap();
    let s = &served.0;
    served_skill(s, "linked-py", "python", "A linked Python script.");
    std::os::unix::fs::symlink(o.join("leak.py"), s.join("linked-py/skill.py")).unwrap();
    served_skill(s, "linked-ts", "typescript", "A linked TypeScript script.");
    std::os::unix::fs::symlink(o.join("leak.ts"), s.join("linked-ts/skill.ts")).unwrap();
    std::fs::create_dir_all(s.join("linked-md")).unwrap();
    std::os::unix::fs::symlink(o.join("md.md"), s.join("linked-md/SKILL.md")).unwrap();
    std::os::unix::fs::symlink(o.join("linked-dir"), s.join("linked-dir")).unwrap();
    served_skill(s, "fine", "python", "A fine skill with a linked resource.");
    std::fs::write(s.join("fine/skill.py"), "'fine'").unwrap();
    std::fs::create_dir_all(s.join("fine/docs")).unwrap();
    std::os::unix::fs::symlink(o.join("secret.txt"), s.join("fine/docs/secret.txt")).unwrap();
    std::os::unix::fs::symlink(o, s.join("fine/linked-folder")).unwrap();
    let settings = json!({"skills": {"dir": dir.0, "serve": [served.0]}});
    let (h, _c) = Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &settings,
        &[],
    )
    .await;
    // A linked script is never run, from either language.
    for lang in [Lang::Ts, Lang::Py] {
        for skill in ["linked_py", "linked_ts"] {
            let code = lang.pick(
                format!("return await skills.{skill}({{}})"),
                format!("skills.{skill}()"),
            );
            let e = fails(&h, lang, json!({ "code": code })).await;
            let m = e["message"].as_str().unwrap();
            assert!(
                m.contains("symbolic link") && !m.contains("LEAKED"),
                "{lang:?} {skill}: {e}"
            );
        }
        // Nor one in a linked skill directory, nor one of a linked SKILL.md.
        for skill in ["linked_dir", "linked_md"] {
            let code = lang.pick(
                format!("return await skills.{skill}({{}})"),
                format!("skills.{skill}()"),
            );
            let e = fails(&h, lang, json!({ "code": code })).await;
            assert!(!e.to_string().contains("LEAKED"), "{lang:?} {skill}: {e}");
            assert!(
                e["message"].as_str().unwrap().contains("symbolic link"),
                "{lang:?} {skill}: {e}"
            );
        }
        let r = ok(
            &h,
            lang,
            lang.pick("return await skills.fine({})", "skills.fine()"),
        )
        .await;
        assert_eq!(r, "fine");
    }
    // Listed: never the targets' frontmatter; the links are said, each alone.
    let (names, problems) = listed_in_both(&h).await;
    assert_eq!(names, ["fine", "linked-py", "linked-ts"], "{problems:?}");
    let said = problems.join("\n");
    assert!(!said.contains("OUTSIDE"), "{said}");
    for linked in ["linked-md/SKILL.md", "linked-dir"] {
        assert!(
            problems
                .iter()
                .any(|p| p.contains(linked) && p.contains("symbolic link")),
            "{linked}: {said}"
        );
    }
    // Over the extension: the list succeeds, no target is in it, no linked file is served.
    let peer = h.client.peer();
    let listed = peer.list_skills(None).await.unwrap();
    let wire = serde_json::to_string(&listed).unwrap();
    assert!(
        !wire.contains("OUTSIDE") && !wire.contains("secret.txt") && !wire.contains("leak."),
        "{wire}"
    );
    let files = read_and_verify_every_file(peer, &listed.skills).await;
    assert!(
        files
            .iter()
            .all(|f| !f.contains("secret") && !f.contains("linked-folder")),
        "{files:?}"
    );
    for uri in [
        "skill://served/fine/docs/secret.txt",
        "skill://served/fine/linked-folder/secret.txt",
        "skill://served/linked-py/skill.py",
        "skill://served/linked-md/SKILL.md",
        "skill://served/linked-dir/SKILL.md",
        "skill://served/fine/docs/%2E%2E/%2E%2E/linked-py/skill.py",
    ] {
        let e = peer
            .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            !e.contains("LEAKED") && !e.contains("TOP-SECRET"),
            "{uri}: {e}"
        );
    }
    let resources = serde_json::to_string(&peer.list_all_resources().await.unwrap()).unwrap();
    assert!(
        !resources.contains("secret") && !resources.contains("OUTSIDE"),
        "{resources}"
    );
}

/// One odd entry in a skills directory (a dangling link, a fifo, a `SKILL.md` that is a
/// directory or a fifo, a stray file, a name that is not UTF-8, bad frontmatter, a huge
/// `SKILL.md`, the same skill served twice) is said alone: every other skill still lists in
/// both languages and over the extension, and still runs.
#[tokio::test]
async fn one_odd_entry_leaves_every_other_skill_listed_and_callable() {
    use std::os::unix::ffi::OsStrExt;
    let dir = TempDir::new("skills-odd-user");
    let served = TempDir::new("skills-odd-served");
    let again = TempDir::new("skills-odd-again");
    let s = &served.0;
    served_skill(s, "fine-py", "python", "Fine in Python.");
    std::fs::write(s.join("fine-py/skill.py"), "'py ok'").unwrap();
    served_skill(s, "fine-ts", "typescript", "Fine in TypeScript.");
    std::fs::write(s.join("fine-ts/skill.ts"), "return 'ts ok'").unwrap();
    std::os::unix::fs::symlink("/nonexistent/skill", s.join("dangling")).unwrap();
    nix::unistd::mkfifo(&s.join("a-fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::create_dir_all(s.join("md-is-dir/SKILL.md")).unwrap();
    std::fs::create_dir_all(s.join("md-is-fifo")).unwrap();
    nix::unistd::mkfifo(
        &s.join("md-is-fifo/SKILL.md"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    std::fs::write(s.join("README.md"), "not a skill").unwrap();
    std::fs::create_dir_all(s.join(std::ffi::OsStr::from_bytes(b"bad-\xff"))).unwrap();
    std::fs::create_dir_all(s.join("bad-yaml")).unwrap();
    std::fs::write(s.join("bad-yaml/SKILL.md"), "---\nname: [\n---\n").unwrap();
    std::fs::create_dir_all(s.join("huge")).unwrap();
    std::fs::File::create(s.join("huge/SKILL.md"))
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    // The same skill in a second served directory: one address, served once.
    served_skill(&again.0, "fine-py", "python", "The same name again.");
    std::fs::write(again.0.join("fine-py/skill.py"), "'again'").unwrap();
    let settings = json!({"skills": {"dir": dir.0, "serve": [served.0, again.0]}});
    let (h, _c) = Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &settings,
        &[],
    )
    .await;
    let (names, problems) = listed_in_both(&h).await;
    assert_eq!(names, ["fine-py", "fine-ts", "fine-py"], "{problems:?}");
    for odd in [
        "dangling",
        "a-fifo",
        "md-is-dir/SKILL.md",
        "md-is-fifo/SKILL.md",
        "README.md",
        "\"bad-\u{fffd}\"",
        "bad-yaml/SKILL.md",
        "huge/SKILL.md",
    ] {
        assert_eq!(
            problems.iter().filter(|p| p.contains(odd)).count(),
            1,
            "{odd}: {problems:?}"
        );
    }
    assert_eq!(problems.len(), 8, "{problems:?}");
    for lang in [Lang::Ts, Lang::Py] {
        let r = ok(
            &h,
            lang,
            lang.pick(
                "return [await skills.fine_ts({}), await skills['served/fine-ts']({})]",
                "[skills.fine_ts(), skills['served/fine-ts']()]",
            ),
        )
        .await;
        assert_eq!(r, json!(["ts ok", "ts ok"]), "{lang:?}: {r}");
    }
    // skills/list never fails as a whole: each skill once, what was left out in `_meta`.
    let listed = h.client.peer().list_skills(None).await.unwrap();
    let uris: Vec<&str> = listed.skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://served/fine-py/SKILL.md",
            "skill://served/fine-ts/SKILL.md"
        ]
    );
    let meta = listed.meta.as_ref().expect("problems in _meta");
    let said = meta.get("code-executor-mcp/problems").unwrap().to_string();
    assert!(
        said.contains("huge/SKILL.md") && said.contains("listed already"),
        "{said}"
    );
    h.client.peer().list_all_resources().await.unwrap();
}

/// A saved skill whose owner cannot be told (its `SKILL.md` grown past what is read) is never
/// saved over, from either language, and a call of it is refused; every saved field is
/// bounded, the error naming the field and its limit.
#[tokio::test]
async fn an_owner_that_cannot_be_told_and_unbounded_fields_are_refused() {
    let dir = TempDir::new("skills-owner");
    let (h, _c) = with_skills(&dir.0, None).await;
    ok(
        &h,
        Lang::Ts,
        "return await saveSkill('report', {code: 'return \"mine\"', description: 'Reports.'})",
    )
    .await;
    let md = dir.0.join("report/SKILL.md");
    let mut text = std::fs::read_to_string(&md).unwrap();
    text.push_str(&"enum value, ".repeat(120_000));
    std::fs::write(&md, text).unwrap();
    for lang in [Lang::Ts, Lang::Py] {
        let save = lang.pick(
            "return await saveSkill('report', {code: 'return \"theirs\"', description: 'Taken over.'})",
            "save_skill('report', '\"theirs\"', 'Taken over.', language='python')",
        );
        let e = fails(&h, lang, json!({ "code": save })).await;
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("nobody may save over it"),
            "{lang:?}: {e}"
        );
        let call = lang.pick("return await skills.report({})", "skills.report()");
        let e = fails(&h, lang, json!({ "code": call })).await;
        assert!(
            e["message"].as_str().unwrap().contains("1048576"),
            "{lang:?}: {e}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.0.join("report/skill.ts")).unwrap(),
        "return \"mine\""
    );
    // Each field past its bound is refused, naming it and its limit.
    for lang in [Lang::Ts, Lang::Py] {
        for (code, field, limit) in [
            (
                lang.pick(
                    "return await saveSkill('big-schema', {code: 'return 1', description: 'd', inputSchema: {type: 'object', properties: {a: {enum: Array.from({length: 100000}, (_, i) => 'v' + i)}}}})",
                    "save_skill('big-schema', '1', 'd', {'type': 'object', 'properties': {'a': {'enum': ['v%d' % i for i in range(100000)]}}})",
                ),
                "inputSchema",
                "65536",
            ),
            (
                lang.pick(
                    "return await saveSkill('big-code', {code: 'x'.repeat(600000), description: 'd'})",
                    "save_skill('big-code', 'x' * 600000, 'd')",
                ),
                "code",
                "524288",
            ),
            (
                lang.pick(
                    "return await saveSkill('big-description', {code: 'return 1', description: 'd'.repeat(2000)})",
                    "save_skill('big-description', '1', 'd' * 2000)",
                ),
                "description",
                "1024",
            ),
        ] {
            let e = fails(&h, lang, json!({ "code": code })).await;
            let m = e["message"].as_str().unwrap();
            assert!(m.contains(field) && m.contains(limit), "{lang:?} {field}: {e}");
        }
    }
    let (names, _) = listed_in_both(&h).await;
    assert!(names.is_empty(), "{names:?}");
}
