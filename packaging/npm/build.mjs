#!/usr/bin/env node
// Builds the npm packages from built binaries, the esbuild/biome pattern: a small launcher
// package whose optionalDependencies are one package per platform (with os, cpu and libc),
// each carrying the binary. No install scripts. Then `npm pack`s them into OUT.
//
//   node packaging/npm/build.mjs --out DIR --binary linux-x64=PATH [--binary linux-arm64=PATH]
//        [--name @code-executor/mcp] [--version 0.1.0]
//
// The launcher lists every platform of PLATFORMS; only those given a --binary are packed
// here (the release packs them all, see packaging/README.md).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const PLATFORMS = {
  "linux-x64": { os: "linux", cpu: "x64", libc: "glibc" },
  "linux-arm64": { os: "linux", cpu: "arm64", libc: "glibc" },
};

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const out = path.resolve(opt("--out") ?? "dist/npm");
const name = opt("--name") ?? "@code-executor/mcp";
const cargoToml = fs.readFileSync(path.join(here, "../../Cargo.toml"), "utf8");
const version = opt("--version") ?? /^version = "([^"]+)"/m.exec(cargoToml)[1];
const binaries = {};
args.forEach((a, i) => {
  if (a === "--binary") {
    const [plat, file] = args[i + 1].split("=");
    if (!PLATFORMS[plat]) throw new Error(`unknown platform ${plat}`);
    binaries[plat] = path.resolve(file);
  }
});

const common = {
  version,
  license: "MIT OR Apache-2.0",
  homepage: "https://github.com/code-executor-mcp/code-executor-mcp",
  repository: { type: "git", url: "git+https://github.com/code-executor-mcp/code-executor-mcp.git" },
};
const stage = path.join(out, "stage");
fs.rmSync(stage, { recursive: true, force: true });
fs.mkdirSync(stage, { recursive: true });
const licences = ["LICENSE-MIT", "LICENSE-APACHE"];
const copyLicences = (dir) =>
  licences.forEach((l) => fs.copyFileSync(path.join(here, "../..", l), path.join(dir, l)));
const pack = (dir) => {
  const file = execFileSync("npm", ["pack", "--silent", "--pack-destination", out], {
    cwd: dir,
    encoding: "utf8",
  }).trim().split("\n").pop();
  console.log(path.join(out, file));
};

// The platform packages.
for (const [plat, bin] of Object.entries(binaries)) {
  const dir = path.join(stage, plat);
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  fs.copyFileSync(bin, path.join(dir, "bin/code-executor-mcp"));
  fs.chmodSync(path.join(dir, "bin/code-executor-mcp"), 0o755);
  copyLicences(dir);
  fs.writeFileSync(
    path.join(dir, "README.md"),
    `# ${name}-${plat}\n\nThe ${plat} binary of [${name}](https://www.npmjs.com/package/${name}); install that package instead.\n`
  );
  const { os, cpu, libc } = PLATFORMS[plat];
  const manifest = {
    name: `${name}-${plat}`,
    description: `The ${plat} binary of ${name}.`,
    ...common,
    os: [os],
    cpu: [cpu],
    ...(libc ? { libc: [libc] } : {}),
    files: ["bin/", ...licences],
    preferUnplugged: true,
  };
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
  pack(dir);
}

// The launcher.
const dir = path.join(stage, "launcher");
fs.cpSync(path.join(here, "launcher"), dir, { recursive: true });
copyLicences(dir);
const platforms = Object.fromEntries(Object.keys(PLATFORMS).map((p) => [`${PLATFORMS[p].os}-${PLATFORMS[p].cpu}`, `${name}-${p}`]));
const manifest = {
  name,
  description:
    "An MCP server that lets an agent use every MCP server it has through sandboxed TypeScript and Python.",
  ...common,
  keywords: ["mcp", "model-context-protocol", "sandbox", "agent", "code-mode"],
  bin: { "code-executor-mcp": "bin/code-executor-mcp.js" },
  files: ["bin/", "README.md", ...licences],
  engines: { node: ">=18" },
  optionalDependencies: Object.fromEntries(Object.keys(PLATFORMS).map((p) => [`${name}-${p}`, version])),
  codeExecutorPlatforms: platforms,
};
fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
fs.chmodSync(path.join(dir, "bin/code-executor-mcp.js"), 0o755);
pack(dir);
