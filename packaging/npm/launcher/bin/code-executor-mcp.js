#!/usr/bin/env node
// Starts the native code-executor-mcp binary from the platform package npm installed with us
// (optionalDependencies with os/cpu/libc: npm installs only the one for this machine; no
// postinstall script, no download). stdin/stdout/stderr are the binary's own, so the MCP
// client talks to it directly; signals are passed on and its exit status is ours.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");
const pkg = require("../package.json");

const PLATFORMS = pkg.codeExecutorPlatforms || {};
const key = `${process.platform}-${process.arch}`;
const platformPkg = PLATFORMS[key];

function fail(message) {
  process.stderr.write(`${pkg.name}: ${message}\n`);
  process.exit(1);
}

if (!platformPkg) {
  fail(
    `no binary for ${key}; packages exist for ${Object.keys(PLATFORMS).join(", ")}. ` +
      "Build from source instead: cargo install code-executor-mcp"
  );
}

let binary;
try {
  binary = require.resolve(`${platformPkg}/bin/code-executor-mcp`);
} catch (_) {
  fail(
    `the platform package ${platformPkg} is not installed. npm installs it as an optional ` +
      "dependency: reinstall without --omit=optional / --no-optional " +
      `(or add it yourself: npm install ${platformPkg}@${pkg.version})`
  );
}

const env = { ...process.env };
// Run through npx: `setup` should write the npx command into the clients' configs, not the
// path of this throwaway cache.
if (!env.CODE_EXECUTOR_MCP_LAUNCH && __dirname.split(path.sep).includes("_npx")) {
  env.CODE_EXECUTOR_MCP_LAUNCH = JSON.stringify(["npx", "-y", pkg.name]);
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit", env });
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"]) {
  process.on(sig, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
  });
}
child.on("error", (e) => fail(`cannot start ${binary}: ${e.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so our parent sees what happened.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
