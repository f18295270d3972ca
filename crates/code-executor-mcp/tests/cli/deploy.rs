//! The Kubernetes manifests of deploy/kubernetes, checked offline (docs/kubernetes.md):
//! rendered by kustomize (`kustomize build` or `kubectl kustomize`), validated in strict mode
//! against the Kubernetes JSON schemas that `kubernetes-validate` bundles (the newest it has,
//! and 1.30, the oldest release with every field the Deployment uses), and read back for what
//! the schemas cannot say: the sandbox's security context, probes on our endpoints, the
//! HPA's metric being one `/metrics` serves, a NetworkPolicy that keeps DNS and upstreams.
//!
//! Tools come from scripts/setup-deploy-tools.sh (called by setup-interop.sh); without them
//! the test prints a loud SKIP, unless `CODE_EXECUTOR_REQUIRE_INTEROP=1` (set in CI) makes
//! that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes")
}

fn interop() -> PathBuf {
    std::env::var_os("CODE_EXECUTOR_INTEROP").map_or_else(
        || PathBuf::from("/tmp/code-executor-interop"),
        PathBuf::from,
    )
}

fn missing(what: &str) -> bool {
    let msg = format!("{what} is not installed: run scripts/setup-deploy-tools.sh");
    if std::env::var_os("CODE_EXECUTOR_REQUIRE_INTEROP").is_some() {
        panic!("{msg} (CODE_EXECUTOR_REQUIRE_INTEROP is set)");
    }
    eprintln!("SKIP: {msg}");
    true
}

/// `kustomize build DIR`, else `kubectl kustomize DIR`.
fn render(dir: &Path) -> Option<String> {
    let tries: [(&str, &[&str]); 2] = [("kustomize", &["build"]), ("kubectl", &["kustomize"])];
    for (bin, args) in tries {
        let Ok(out) = Command::new(bin).args(args).arg(dir).output() else {
            continue;
        };
        assert!(
            out.status.success(),
            "{bin} {args:?} {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        return Some(String::from_utf8(out.stdout).unwrap());
    }
    None
}

/// Runs kubernetes-validate --strict on `file` for `version` (None: its newest).
fn validate(tool: &Path, file: &Path, version: Option<&str>) {
    let mut cmd = Command::new(tool);
    cmd.args(["--strict", "--quiet"]);
    if let Some(v) = version {
        cmd.args(["-k", v]);
    }
    let out = cmd.arg(file).output().unwrap();
    assert!(
        out.status.success(),
        "kubernetes-validate {version:?} {}:\n{}{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The documents of a YAML stream, as JSON (PyYAML from the same venv).
fn documents(python: &Path, yaml: &Path) -> Vec<Value> {
    let out = Command::new(python)
        .args([
            "-c",
            "import json,sys,yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))",
        ])
        .arg(yaml)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind}/{name} in the render"))
}

#[test]
fn the_kubernetes_manifests_render_and_validate_offline() {
    let tool = interop().join("venv/bin/kubernetes-validate");
    let python = interop().join("venv/bin/python");
    if !tool.exists() && missing("kubernetes-validate") {
        return;
    }
    let tmp = test_support::TempDir::new("deploy");

    // Each plain manifest of the base on its own (no kustomize involved).
    let base = deploy_dir().join("base");
    for entry in std::fs::read_dir(&base).unwrap().flatten() {
        let path = entry.path();
        if path.file_name().unwrap() != "kustomization.yaml" {
            validate(&tool, &path, None);
        }
    }

    let Some(rendered) = render(&deploy_dir().join("overlays/example")) else {
        missing("kustomize (or kubectl)");
        return;
    };
    let file = tmp.0.join("example.yaml");
    std::fs::write(&file, &rendered).unwrap();
    validate(&tool, &file, None);
    validate(&tool, &file, Some("1.30.0"));
    let docs = documents(&python, &file);
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "ConfigMap",
        "Secret",
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "NetworkPolicy",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
    }
    for d in &docs {
        if d["kind"] != "Namespace" {
            assert_eq!(d["metadata"]["namespace"], "code-executor", "{}", d["kind"]);
        }
    }

    // The Deployment: the security context the sandbox needs, and nothing more.
    let dep = find(&docs, "Deployment", "code-executor-mcp");
    let pod = &dep["spec"]["template"]["spec"];
    assert_eq!(pod["hostUsers"], false);
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "Localhost"
    );
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["localhostProfile"],
        "profiles/code-executor-mcp.json"
    );
    let c = &pod["containers"][0];
    assert_eq!(
        c["image"],
        "registry.example.com/tools/code-executor-mcp:0.1.0"
    );
    let sc = &c["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["privileged"], false);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert!(sc["capabilities"]["add"].is_null());
    assert_eq!(sc["procMount"], "Unmasked");
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "serve");
    assert!(args.contains(&"--http=0.0.0.0:3333"), "{args:?}");
    assert!(args.contains(&"--public-url=https://mcp.example.com"));
    let env = c["env"].as_array().unwrap();
    let replica = env
        .iter()
        .find(|e| e["name"] == "CODE_EXECUTOR_REPLICA_ID")
        .expect("the replica id");
    // `<pod name>_<pod IP>`: both come before it (Kubernetes expands only those).
    assert_eq!(replica["value"], "$(POD_NAME)_$(POD_IP)");
    let at = |name: &str| env.iter().position(|e| e["name"] == name).unwrap();
    assert!(at("POD_NAME") < at("CODE_EXECUTOR_REPLICA_ID"));
    assert!(at("POD_IP") < at("CODE_EXECUTOR_REPLICA_ID"));
    assert_eq!(
        env[at("POD_NAME")]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.name"
    );
    assert_eq!(
        env[at("POD_IP")]["valueFrom"]["fieldRef"]["fieldPath"],
        "status.podIP"
    );
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["startupProbe"]["httpGet"]["path"], "/healthz");
    // Every path the server writes is a volume, since the root is read-only.
    let mounts: Vec<&str> = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    for path in [
        "/tmp",
        "/var/lib/code-executor-mcp",
        "/run/secrets/code-executor",
    ] {
        assert!(mounts.contains(&path), "{path} not mounted: {mounts:?}");
    }
    // The audit log's directory is one of those volumes: on the read-only root the log
    // could not be written and /readyz would fail.
    let cm = find(&docs, "ConfigMap", "code-executor-mcp");
    let settings: Value =
        serde_json::from_str(cm["data"]["config.json"].as_str().unwrap()).unwrap();
    let audit = settings["audit"]["path"].as_str().expect("audit.path");
    assert!(
        c["volumeMounts"].as_array().unwrap().iter().any(|m| {
            audit.starts_with(&format!("{}/", m["mountPath"].as_str().unwrap()))
                && m["readOnly"] != true
        }),
        "the audit log {audit} is on no writable volume: {mounts:?}"
    );
    // /metrics: the annotations name the port --metrics-addr serves it on without a token
    // (on 3333 it requires one), the container declares it, and the policy lets only the
    // monitoring namespace reach it.
    let port = dep["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"]
        .as_str()
        .unwrap();
    let port_n: u64 = port.parse().unwrap();
    assert!(
        args.contains(&format!("--metrics-addr=0.0.0.0:{port}").as_str()),
        "{args:?}"
    );
    assert!(
        c["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["containerPort"] == port_n)
    );
    let np = find(&docs, "NetworkPolicy", "code-executor-mcp");
    let scrape = np["spec"]["ingress"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ports"][0]["port"] == port_n)
        .expect("an ingress rule for the metrics port");
    assert_eq!(
        scrape["from"],
        serde_json::json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}])
    );
    assert!(c["resources"]["limits"]["memory"].is_string());
    assert!(c["resources"]["requests"]["memory"].is_string());

    // The settings the sizing is derived from parse as our settings file would.
    let cm = find(&docs, "ConfigMap", "code-executor-mcp");
    let settings: Value =
        serde_json::from_str(cm["data"]["config.json"].as_str().unwrap()).unwrap();
    assert_eq!(settings["limits"]["maxConcurrentExecutions"], 4);
    let _: Value = serde_json::from_str(cm["data"]["mcp.json"].as_str().unwrap()).unwrap();

    // The HPA scales on a metric our /metrics serves.
    let hpa = find(&docs, "HorizontalPodAutoscaler", "code-executor-mcp");
    let metric = &hpa["spec"]["metrics"][0];
    assert_eq!(metric["type"], "Pods");
    let name = metric["pods"]["metric"]["name"].as_str().unwrap();
    let metrics_rs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../faces/src/http/metrics.rs"),
    )
    .unwrap();
    assert!(
        metrics_rs.contains(&format!("# TYPE {name} gauge")),
        "{name} is not a gauge of /metrics"
    );
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "code-executor-mcp");

    // The NetworkPolicy: the server's pods, DNS, in-cluster upstreams and the overlay's
    // external upstream; peers are other apps' pods, so none carries our labels.
    let np = find(&docs, "NetworkPolicy", "code-executor-mcp");
    assert_eq!(
        np["spec"]["podSelector"]["matchLabels"],
        dep["spec"]["selector"]["matchLabels"]
    );
    let egress = np["spec"]["egress"].as_array().unwrap();
    let peers: Vec<&Value> = egress
        .iter()
        .flat_map(|r| r["to"].as_array().unwrap())
        .collect();
    assert!(
        peers
            .iter()
            .any(|p| p["podSelector"]["matchLabels"] == serde_json::json!({"k8s-app": "kube-dns"})),
        "{egress:?}"
    );
    assert!(peers.iter().any(|p| p["podSelector"]["matchLabels"]
        == serde_json::json!({"code-executor-mcp/upstream": "true"})));
    assert!(
        peers
            .iter()
            .any(|p| p["ipBlock"]["cidr"] == "203.0.113.0/24")
    );
    let types = &np["spec"]["policyTypes"];
    assert_eq!(types, &serde_json::json!(["Ingress", "Egress"]));

    // The Services select the Deployment's pods.
    for svc in ["code-executor-mcp", "code-executor-mcp-replicas"] {
        assert_eq!(
            find(&docs, "Service", svc)["spec"]["selector"],
            dep["spec"]["selector"]["matchLabels"]
        );
    }
    let secret = find(&docs, "Secret", "code-executor-mcp-tokens");
    assert!(secret["data"]["tokens"].is_string());
}
