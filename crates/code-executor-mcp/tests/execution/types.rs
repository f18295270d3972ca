//! Types that learn and code checked before it runs, through the built binary:
//! - output types learned from results (no `outputSchema` declared), shown marked inferred in
//!   signatures, `getToolSchema`, search detail and `discoverMCPTools`, widened by a result
//!   that contradicts them, kept on disk without a single value of any result;
//! - `check: true` with real checkers (TypeScript 7's tsc; ty, mypy and pyright, installed by
//!   `scripts/setup-interop.sh`): against the reference servers' learned types, code that
//!   uses them right passes and code that misuses them is refused with line and column, and
//!   a refused run calls nothing (a counter upstream proves it).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig, TempDir, fixture_entry};

use crate::common::{BOTH, EXE};

/// The interop prefix (`scripts/setup-interop.sh`) with its checkers and reference servers.
fn checkers() -> Option<PathBuf> {
    crate::common::interop::prefix(&[
        "checkers/node_modules/.bin/tsc",
        "checkers/node_modules/.bin/pyright",
        "checkers-venv/bin/ty",
        "checkers-venv/bin/mypy",
        "upstreams.json",
    ])
}

fn tsc(p: &Path) -> String {
    p.join("checkers/node_modules/.bin/tsc")
        .display()
        .to_string()
}

/// The Python checkers, by the setting that names them.
fn python_checkers(p: &Path) -> Vec<String> {
    vec![
        p.join("checkers-venv/bin/ty").display().to_string(),
        p.join("checkers-venv/bin/mypy").display().to_string(),
        p.join("checkers/node_modules/.bin/pyright")
            .display()
            .to_string(),
    ]
}

async fn ok(h: &Harness, lang: Lang, args: Value) -> Value {
    let (v, is_error) = h.run_tool(lang.tool(), args.clone()).await;
    assert!(!is_error, "{lang:?}: {args}\n{v}");
    v["result"].clone()
}

async fn refused(h: &Harness, lang: Lang, args: Value) -> Value {
    let (v, is_error) = h.run_tool(lang.tool(), args.clone()).await;
    assert!(is_error, "{lang:?}: {args}\n{v}");
    v["error"].clone()
}

/// A server with the fixture upstream (pause tools on: `tick` counts its calls), `settings`,
/// and its schema cache in `cache`.
async fn fixture_server(settings: Value, cache: &Path) -> (Harness, TempConfig) {
    let mut fx = fixture_entry("fx");
    fx["env"] = json!({"FIXTURE_PAUSE_TOOLS": "1"});
    Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fx }),
        &settings,
        &[("CODE_EXECUTOR_CACHE_DIR", cache.to_str().unwrap())],
    )
    .await
}

/// Every file under `dir`, read whole.
fn all_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(all_files(&p));
        } else {
            out.push((
                p.clone(),
                String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into(),
            ));
        }
    }
    out
}

#[tokio::test]
async fn learned_types_are_shown_marked_inferred_and_widen() {
    let cache = TempDir::new("types-shown");
    let (h, _c) = fixture_server(json!({}), &cache.0).await;
    // Before any result: nothing learned, the result is unknown.
    let sig = ok(
        &h,
        Lang::Ts,
        json!({"code": "return tools.fx.reflect.signature"}),
    )
    .await;
    assert!(sig.as_str().unwrap().contains("Promise<unknown>"), "{sig}");
    ok(
        &h,
        Lang::Ts,
        json!({"code": "await tools.fx.reflect({value: {items: [{id: 1, name: 'a'}], total: 1}}); \
               await tools.fx.reflect({value: {items: [{id: 2, name: null, tags: ['x']}], total: 1, next: 'c'}}); \
               return await tools.fx.echo({message: 'hi'})"}),
    )
    .await;
    let sig = ok(
        &h,
        Lang::Ts,
        json!({"code": "return tools.fx.reflect.signature"}),
    )
    .await;
    let sig = sig.as_str().unwrap();
    for part in [
        "Inferred by code-executor-mcp from 2 results",
        "items: {",
        "id: number;",
        "name: string | null;",
        "tags?: string[];",
        "next?: string;",
        "total: number;",
    ] {
        assert!(sig.contains(part), "{part}\n{sig}");
    }
    let py = ok(&h, Lang::Py, json!({"code": "tools.fx.reflect.signature"})).await;
    let py = py.as_str().unwrap();
    assert!(
        py.contains("Inferred by code-executor-mcp") && py.contains("NotRequired[str]"),
        "{py}"
    );
    // A text that is not JSON: a string.
    let echo = ok(
        &h,
        Lang::Ts,
        json!({"code": "return tools.fx.echo.signature"}),
    )
    .await;
    assert!(
        echo.as_str().unwrap().contains("type EchoResult = string;"),
        "{echo}"
    );
    // getToolSchema and search detail show it apart from a declared schema.
    let got = ok(
        &h,
        Lang::Ts,
        json!({"code": "return await getToolSchema('mcp__fx__reflect')"}),
    )
    .await;
    assert!(got.get("outputSchema").is_none(), "{got}");
    assert_eq!(
        got["inferredOutputSchema"]["x-inferred"]["results"], 2,
        "{got}"
    );
    let found = ok(
        &h,
        Lang::Py,
        json!({"code": "search_tools('reflect value', detail='full', server='fx')['tools'][0]"}),
    )
    .await;
    assert!(
        found["inferredOutputSchema"]["properties"]["items"].is_object(),
        "{found}"
    );
    // A declared outputSchema wins: `add` is never learned.
    ok(
        &h,
        Lang::Ts,
        json!({"code": "return await tools.fx.add({a: 1, b: 2})"}),
    )
    .await;
    let add = ok(
        &h,
        Lang::Ts,
        json!({"code": "return await getToolSchema('mcp__fx__add')"}),
    )
    .await;
    assert!(
        add["outputSchema"].is_object() && add.get("inferredOutputSchema").is_none(),
        "{add}"
    );
    // A contradicting result widens the type; nothing throws because of it.
    let r = ok(
        &h,
        Lang::Py,
        json!({"code": "tools.fx.reflect(value='just text')"}),
    )
    .await;
    assert_eq!(r, "just text");
    let sig = ok(
        &h,
        Lang::Ts,
        json!({"code": "return tools.fx.reflect.signature"}),
    )
    .await;
    assert!(sig.as_str().unwrap().contains("from 3 results"), "{sig}");
    assert!(sig.as_str().unwrap().contains("| string"), "{sig}");
    // What a client lists is still the server's own definition.
    let listed = h.client.peer().list_all_tools().await.unwrap();
    assert!(listed.iter().all(|t| {
        t.output_schema
            .as_ref()
            .is_none_or(|o| !o.contains_key("x-inferred"))
    }));
}

#[tokio::test]
async fn no_value_of_any_result_is_kept_and_types_survive_a_restart() {
    const SECRET: &str = "sk_live_Zq8vW2xN5mR7tY1uI3oP";
    const EMAIL: &str = "alice.secret@example.com";
    let cache = TempDir::new("types-secrets");
    {
        let (h, _c) = fixture_server(json!({}), &cache.0).await;
        let code = format!(
            "await tools.fx.reflect({{value: {{apiKey: '{SECRET}', owner: '{EMAIL}', n: 987654321, \
             byUser: {{'{EMAIL}': {{seen: 3}}, '{SECRET}': {{seen: 1}}}}, list: ['{SECRET}', 12.5]}}}});\n\
             await tools.fx.echo({{message: '{SECRET} {EMAIL}'}});\n\
             return await tools.fx.reflect({{value: '{SECRET}'}})"
        );
        ok(&h, Lang::Ts, json!({ "code": code })).await;
        // The learned type has the field names, and the keys that are data only as a map.
        let sig = ok(
            &h,
            Lang::Ts,
            json!({"code": "return tools.fx.reflect.signature"}),
        )
        .await;
        let sig = sig.as_str().unwrap();
        assert!(
            sig.contains("apiKey: string") && sig.contains("byUser: Record<string,"),
            "{sig}"
        );
        assert!(
            !sig.contains(SECRET) && !sig.contains(EMAIL) && !sig.contains("987654321"),
            "{sig}"
        );
        drop(h);
    }
    let files = all_files(&cache.0);
    assert!(
        files.iter().any(|(p, _)| p
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("types-")),
        "no types file in {files:?}"
    );
    for (path, text) in &files {
        for planted in [SECRET, EMAIL, "987654321", "12.5", "alice"] {
            assert!(
                !text.contains(planted),
                "{} keeps {planted}:\n{text}",
                path.display()
            );
        }
    }
    // A new server process starts with what was learned.
    let (h, _c) = fixture_server(json!({}), &cache.0).await;
    let sig = ok(&h, Lang::Py, json!({"code": "tools.fx.reflect.signature"})).await;
    assert!(
        sig.as_str()
            .unwrap()
            .contains("Inferred by code-executor-mcp from 2 results"),
        "{sig}"
    );
    // So do the command line's `tools show` and `wrappers`, in both languages.
    let config = h.config_path().unwrap().to_path_buf();
    let out_dir = TempDir::new("types-wrappers");
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(EXE)
            .arg("--config")
            .arg(&config)
            .arg("--no-discover")
            .args(args)
            .env("CODE_EXECUTOR_CACHE_DIR", &cache.0)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for lang in ["ts", "py"] {
        let shown = cli(&["tools", "show", "mcp__fx__reflect", "--lang", lang]);
        assert!(
            shown.contains("Inferred by code-executor-mcp"),
            "{lang}: {shown}"
        );
        let dir = out_dir.0.join(lang);
        cli(&["wrappers", "--lang", lang, "--out", dir.to_str().unwrap()]);
        let written: String = all_files(&dir)
            .into_iter()
            .filter(|(p, _)| p.to_string_lossy().contains("reflect"))
            .map(|(_, t)| t)
            .collect();
        assert!(
            written.contains("Inferred by code-executor-mcp"),
            "{lang}: {written}"
        );
    }
    let json = cli(&["tools", "show", "mcp__fx__reflect", "--json"]);
    assert!(json.contains("inferredOutputSchema"), "{json}");
}

#[tokio::test]
async fn a_refused_check_runs_nothing_and_a_missing_checker_says_so() {
    let Some(p) = checkers() else { return };
    let cache = TempDir::new("types-nothing-runs");
    let settings = json!({"check": {"typescript": tsc(&p), "python": python_checkers(&p)[0]}});
    let (h, _c) = fixture_server(settings, &cache.0).await;
    for lang in BOTH {
        let code = lang.pick(
            "await tools.fx.tick({});\nconst n: number = 'not a number';\nreturn n",
            "tools.fx.tick()\nn: int = 'not a number'\nn",
        );
        let e = refused(&h, lang, json!({"code": code, "check": true})).await;
        assert_eq!(e["name"], "TypeCheckError", "{e}");
        let msg = e["message"].as_str().unwrap();
        assert!(
            msg.contains("nothing ran") && msg.contains("line 2, column"),
            "{msg}"
        );
        // TypeScript 7's tsc and ty are kept warm, as language servers.
        assert!(msg.contains("kept running as a language server"), "{msg}");
        // Misspelt tools and servers are found too.
        let e = refused(
            &h,
            lang,
            json!({"code": lang.pick("return await tools.fx.tikc({})", "tools.fx.tikc()"), "check": true}),
        )
        .await;
        assert!(e["message"].as_str().unwrap().contains("tikc"), "{e}");
    }
    // The counter upstream: no `tick` ran.
    let counts = ok(
        &h,
        Lang::Ts,
        json!({"code": "return await tools.fx.counts({})"}),
    )
    .await;
    assert_eq!(counts["tick"].as_u64().unwrap_or(0), 0, "{counts}");
    // Unchecked (the default), the same code runs: the counter moves.
    ok(
        &h,
        Lang::Ts,
        json!({"code": "await tools.fx.tick({}); return 1"}),
    )
    .await;
    let counts = ok(
        &h,
        Lang::Ts,
        json!({"code": "return await tools.fx.counts({})"}),
    )
    .await;
    assert_eq!(counts["tick"], 1, "{counts}");
    // Code that is right passes and runs, in both languages.
    for lang in BOTH {
        let code = lang.pick(
            "const s = await tools.fx.add({a: 1, b: 2});\nconst n: number = s.sum;\nreturn n",
            "s = tools.fx.add(a=1, b=2)\nn: float = s['sum']\nn",
        );
        let sum = ok(&h, lang, json!({"code": code, "check": true})).await;
        assert_eq!(sum.as_f64(), Some(3.0), "{lang:?}: {sum}");
    }
    // In a session, a global of an earlier run is no error; outside one it is.
    for lang in BOTH {
        let (v, is_error) = h
            .run_tool(
                lang.tool(),
                json!({"code": lang.pick("var kept = 41; return kept", "kept = 41\nkept"), "session": "new"}),
            )
            .await;
        assert!(!is_error, "{v}");
        let id = v["session"]["id"].as_str().unwrap().to_string();
        let code = lang.pick("return kept + 1", "kept + 1");
        let got = ok(
            &h,
            lang,
            json!({"code": code, "session": id, "check": true}),
        )
        .await;
        assert_eq!(got.as_f64(), Some(42.0), "{lang:?}: {got}");
        let e = refused(&h, lang, json!({"code": code, "check": true})).await;
        assert!(e["message"].as_str().unwrap().contains("kept"), "{e}");
    }
    // A `///` directive cannot make the checker read a file of the host.
    let e = refused(
        &h,
        Lang::Ts,
        json!({"code": "/// <reference path=\"/etc/passwd\" />\nconst x: number = root;\nreturn x", "check": true}),
    )
    .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Cannot find name 'root'"),
        "{e}"
    );
    drop(h);
    // A checker named in the settings that is not there: a clear error, nothing runs.
    let (h, _c) = fixture_server(
        json!({"check": {"enabled": true, "typescript": "/nonexistent/tsc"}}),
        &cache.0,
    )
    .await;
    let e = refused(
        &h,
        Lang::Ts,
        json!({"code": "await tools.fx.tick({}); return 1"}),
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().contains("/nonexistent/tsc"),
        "{e}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("call without check"),
        "{e}"
    );
    // `check: false` on the call overrides the settings.
    ok(&h, Lang::Ts, json!({"code": "return 1", "check": false})).await;
}

/// The five reference servers upstream: each of five result shapes of tools that declare no
/// `outputSchema` is learned from one call, and then code that uses it right type-checks with
/// tsc, ty, mypy and pyright, while code that misuses it is refused.
#[tokio::test]
async fn reference_servers_learned_types_check_with_real_checkers() {
    let Some(p) = checkers() else { return };
    let cache = TempDir::new("types-reference");
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("upstreams.json")).unwrap()).unwrap();
    let run = |settings: Value| {
        let config = config["mcpServers"].clone();
        let cache = cache.0.clone();
        async move {
            Harness::with_settings(
                EXE.as_ref(),
                config,
                &settings,
                &[("CODE_EXECUTOR_CACHE_DIR", cache.to_str().unwrap())],
            )
            .await
        }
    };
    let (h, _c) = run(json!({"check": {"typescript": tsc(&p)}})).await;
    // One call each: a string, an object of strings, blocks of text and image, of text and
    // resource links, of text and an embedded resource; and git's text.
    ok(
        &h,
        Lang::Ts,
        json!({"code": "await tools.everything.echo({message: 'hi'}); \
            await tools.everything['get-env']({}); \
            await tools.everything['get-tiny-image']({}); \
            await tools.everything['get-resource-links']({count: 2}); \
            await tools.everything['get-resource-reference']({resourceType: 'Text', resourceId: 1}); \
            return await tools.git.git_status({repo_path: '" .to_string() + p.join("data/git-repo").to_str().unwrap() + "'})"}),
    )
    .await;
    let good_ts = r#"
const e = await tools.everything.echo({message: 'x'});
const upper: string = e.toUpperCase();
const env = await tools.everything['get-env']({});
const names: string[] = Object.keys(env);
const img = await tools.everything.get_tiny_image({});
const kinds = img.map((b) => (typeof b === 'string' ? 'text' : b.type));
const links = await tools.everything['get-resource-links']({count: 1});
const uris = links.filter((b) => typeof b !== 'string').map((b) => (typeof b === 'string' ? '' : b.type));
const r = await tools.everything['get-resource-reference']({resourceType: 'Text', resourceId: 1});
const n: number = r.length;
const status: string = await tools.git.git_status({repo_path: '/x'});
return [upper, names, kinds, uris, n, status.length];
"#;
    let bad_ts = [
        "const e = await tools.everything.echo({message: 'x'});\nreturn e.toFixed(2);",
        "const img = await tools.everything.get_tiny_image({});\nreturn img.toUpperCase();",
        "const env = await tools.everything['get-env']({});\nconst n: number = env.PATH;\nreturn n;",
        "const links = await tools.everything['get-resource-links']({count: 1});\nreturn links.total;",
        "const r = await tools.everything['get-resource-reference']({resourceType: 'Text', resourceId: 1});\nconst s: string = r;\nreturn s;",
        "const s = await tools.git.git_status({repo_path: '/x'});\nreturn s.lines();",
    ];
    let checked = |code: &str| json!({"code": code, "check": true, "timeoutMs": 60000});
    // Only checked, not run: a passing check of code that calls tools would call them, so
    // the right code is checked in a run that names the tools but returns before calling.
    let dry = |code: &str| format!("if (Date.now() > 0) return 'checked';\n{code}");
    assert_eq!(ok(&h, Lang::Ts, checked(&dry(good_ts))).await, "checked");
    for bad in bad_ts {
        let e = refused(&h, Lang::Ts, checked(&dry(bad))).await;
        assert_eq!(e["name"], "TypeCheckError", "{bad}\n{e}");
        assert!(
            e["message"].as_str().unwrap().contains("line 3"),
            "{bad}\n{e}"
        );
    }
    drop(h);
    let good_py = r#"
e = tools.everything.echo(message="x")
upper: str = e.upper()
env = tools.everything.get_env()
names: list[str] = list(env.keys())
img = tools.everything.get_tiny_image()
kinds = [b if isinstance(b, str) else b["type"] for b in img]
r = tools.everything.get_resource_reference(resourceType="Text", resourceId=1)
n: int = len(r)
status: str = tools.git.git_status(repo_path="/x")
[upper, names, kinds, n, status]
"#;
    let bad_py = [
        "e = tools.everything.echo(message='x')\ne.to_fixed(2)",
        "img = tools.everything.get_tiny_image()\nimg.upper()",
        "env = tools.everything.get_env()\nn: int = env['PATH']",
        "s = tools.git.git_status(repo_path='/x')\ns.lines()",
        "tools.everything.echo(mesage='x')",
    ];
    // A condition no checker decides: what follows is not unreachable to it.
    let dry_py =
        |code: &str| format!("import time\nif time.time() > 0:\n    return 'checked'\n{code}");
    for checker in python_checkers(&p) {
        let (h, _c) = run(json!({"check": {"python": checker}})).await;
        assert_eq!(
            ok(&h, Lang::Py, checked(&dry_py(good_py))).await,
            "checked",
            "{checker}"
        );
        for bad in bad_py {
            let e = refused(&h, Lang::Py, checked(&dry_py(bad))).await;
            assert_eq!(e["name"], "TypeCheckError", "{checker}: {bad}\n{e}");
            let msg = e["message"].as_str().unwrap();
            assert!(
                msg.contains("line 4") || msg.contains("line 5"),
                "{checker}: {bad}\n{e}"
            );
        }
    }
}

/// A checker reads no configuration it did not get from us: files planted in the parent of
/// the check directory (the server's `TMPDIR`, as a world-writable `/tmp` would be) and in
/// the home and XDG configuration directories name a host folder with a module (and
/// TypeScript declarations) whose types quote a value; no checker sees it. Each checker of
/// both languages is tried; a planted `tsconfig.json` does not break TypeScript's checks.
#[tokio::test]
async fn checkers_read_no_configuration_planted_above_them_or_in_home() {
    let Some(p) = checkers() else { return };
    let root = TempDir::new("types-planted");
    let tmp = root.0.join("tmp");
    let home = root.0.join("home");
    let host = root.0.join("host");
    let secret = "host-secret-value-7319";
    for d in [
        &tmp,
        &host,
        &home.join(".config/ty"),
        &home.join(".config/mypy"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    let h = host.display().to_string();
    std::fs::write(
        host.join("hostmod.py"),
        format!("from typing import Literal\nSECRET: Literal['{secret}'] = '{secret}'\n"),
    )
    .unwrap();
    std::fs::write(
        host.join("hostdecl.d.ts"),
        format!("declare const HOSTVAL: '{secret}';\n"),
    )
    .unwrap();
    let ty = format!("[environment]\nextra-paths = ['{h}']\n");
    let mypy = format!("[mypy]\nmypy_path = {h}\n");
    let pyproject = format!(
        "[tool.ty.environment]\nextra-paths = ['{h}']\n[tool.mypy]\nmypy_path = '{h}'\n\
         [tool.pyright]\nextraPaths = ['{h}']\n"
    );
    let pyright = format!("{{\"extraPaths\": [\"{h}\"]}}");
    let tsconfig = format!(
        "{{\"compilerOptions\": {{\"strict\": false}}, \"files\": [\"{h}/hostdecl.d.ts\"]}}"
    );
    let types = tmp.join("node_modules/@types/host");
    std::fs::create_dir_all(&types).unwrap();
    std::fs::write(
        types.join("index.d.ts"),
        format!("declare const HOSTVAL: '{secret}';\n"),
    )
    .unwrap();
    for (dir, name, text) in [
        (&tmp, "ty.toml", ty.as_str()),
        (&tmp, "pyproject.toml", pyproject.as_str()),
        (&tmp, "mypy.ini", mypy.as_str()),
        (&tmp, "setup.cfg", mypy.as_str()),
        (&tmp, "pyrightconfig.json", pyright.as_str()),
        (&tmp, "tsconfig.json", tsconfig.as_str()),
        (&tmp, "jsconfig.json", tsconfig.as_str()),
        (&tmp, "package.json", "{\"type\": \"module\"}"),
        (&tmp, ".python-version", "3.8\n"),
        (&home, ".config/ty/ty.toml", ty.as_str()),
        (&home, ".config/mypy/config", mypy.as_str()),
        (&home, ".mypy.ini", mypy.as_str()),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let config_home = home.join(".config");
    let env = [
        ("TMPDIR", tmp.to_str().unwrap()),
        ("HOME", home.to_str().unwrap()),
        ("XDG_CONFIG_HOME", config_home.to_str().unwrap()),
    ];
    let mut pythons = python_checkers(&p).into_iter();
    let first = pythons.next().unwrap();
    let mut servers = vec![json!({"typescript": tsc(&p), "python": first})];
    servers.extend(pythons.map(|c| json!({"python": c})));
    for (i, check) in servers.into_iter().enumerate() {
        let (h, _c) =
            Harness::with_settings(EXE.as_ref(), json!({}), &json!({ "check": check }), &env).await;
        let langs: &[Lang] = if i == 0 { &BOTH } else { &[Lang::Py] };
        for &lang in langs {
            let bad = lang.pick(
                "const x: number = HOSTVAL;\nreturn x",
                "import hostmod\nx: int = hostmod.SECRET\nx",
            );
            let e = refused(&h, lang, json!({"code": bad, "check": true})).await;
            let msg = e["message"].as_str().unwrap();
            assert_eq!(e["name"], "TypeCheckError", "{check}: {e}");
            assert!(
                !msg.contains(secret),
                "{check}: a planted file was read: {msg}"
            );
            assert!(
                ["HOSTVAL", "hostmod"].iter().any(|n| msg.contains(n)),
                "{check}: the name is unknown to the checker: {msg}"
            );
            // The checker still works beside the planted files.
            let good = lang.pick("const n: number = 1;\nreturn n", "n: int = 1\nn");
            assert_eq!(
                ok(&h, lang, json!({"code": good, "check": true})).await,
                1,
                "{check}"
            );
        }
    }
}

/// Code whose types a checker takes long over, and much memory: TypeScript, unions of 100,000
/// members (template literals) mapped to object types and compared with each other; Python,
/// unions of 8,000 literals compared member by member (mypy).
fn huge_union(lang: Lang) -> String {
    match lang {
        Lang::Ts => "type D = '0'|'1'|'2'|'3'|'4'|'5'|'6'|'7'|'8'|'9';\n\
             type K = `${D}${D}${D}${D}`;\n\
             type U = `a${K}` | `b${K}` | `c${K}` | `d${K}` | `e${K}` | `f${K}` | `g${K}` | `h${K}` | `i${K}` | `j${K}`;\n\
             type O = { [P in U]: { k: P; v: [P, P] } }[U];\n\
             type S = { [P in U]: { k: P; v: [P, P]; extra: 1 } }[U];\n\
             type T = { [P in U]: { k: `${P}${P}`; w: [S, O] } }[U];\n\
             type W = { [P in U]: { k: P; w: T } }[U];\n\
             declare const s: S;\n\
             const o: O = s;\n\
             const t: T = s as unknown as T;\n\
             const w: W = t as unknown as W;\n\
             return [o, t, w].length"
            .to_string(),
        Lang::Py => {
            let union = |from: usize| {
                let members: Vec<String> =
                    (from..from + 8000).map(|i| format!("Literal[{i}]")).collect();
                format!("Union[{}]", members.join(", "))
            };
            format!(
                "from typing import Literal, Union\n\
                 def f(u: {u}, v: {v}) -> None:\n    z: {u} = v\n    y = u if u else v\n1",
                u = union(0),
                v = union(1)
            )
        }
    }
}

/// A check spends the execution's own deadline: with `timeoutMs: 3000`, a check that would
/// take far longer ends by then (well within twice that), refused with an error saying the
/// check did not finish (or hit the memory bound), and nothing runs. The warm checker that
/// was at it is ended; the next check starts a new one and passes. Both languages (TypeScript
/// 7's tsc kept warm; mypy as a process per check).
#[tokio::test]
async fn a_check_spends_the_executions_deadline_and_fails_closed() {
    let Some(p) = checkers() else { return };
    let cache = TempDir::new("types-deadline");
    let mypy = python_checkers(&p)[1].clone();
    let settings = json!({"check": {"typescript": tsc(&p), "python": mypy}});
    let (h, _c) = fixture_server(settings, &cache.0).await;
    for lang in BOTH {
        // Warm first: what is measured is the check, not the checker's start.
        let good = lang.pick("const n: number = 1;\nreturn n", "n: int = 1\nn");
        ok(&h, lang, json!({"code": good, "check": true})).await;
        let started = std::time::Instant::now();
        let e = refused(
            &h,
            lang,
            json!({"code": huge_union(lang), "check": true, "timeoutMs": 3000}),
        )
        .await;
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_millis(6000),
            "{lang:?}: the check took {took:?} of a 3000 ms deadline: {e}"
        );
        assert_eq!(e["name"], "TypeCheckError", "{lang:?}: {e}");
        let msg = e["message"].as_str().unwrap();
        assert!(
            msg.contains("nothing ran")
                && (msg.contains("did not finish") || msg.contains("memory")),
            "{lang:?}: {msg}"
        );
        // The next check works (a new warm checker where the last was ended).
        assert_eq!(
            ok(&h, lang, json!({"code": good, "check": true})).await,
            1,
            "{lang:?}"
        );
    }
}

/// A checker runs with a memory bound (`check.memoryMb`): a check that needs more ends at it,
/// refused with an error naming the bound; nothing runs. Both languages.
#[tokio::test]
async fn a_checker_past_its_memory_bound_is_refused_clearly() {
    let Some(p) = checkers() else { return };
    let cache = TempDir::new("types-memory");
    let mypy = python_checkers(&p)[1].clone();
    let settings = json!({"check": {"typescript": tsc(&p), "python": mypy, "memoryMb": 100}});
    let (h, _c) = fixture_server(settings, &cache.0).await;
    for lang in BOTH {
        let e = refused(
            &h,
            lang,
            json!({"code": huge_union(lang), "check": true, "timeoutMs": 60000}),
        )
        .await;
        assert_eq!(e["name"], "TypeCheckError", "{lang:?}: {e}");
        let msg = e["message"].as_str().unwrap();
        assert!(
            msg.contains("nothing ran") && msg.contains("memory"),
            "{lang:?}: {msg}"
        );
    }
}
