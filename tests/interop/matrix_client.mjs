// One cell of the settings matrix (tests/interop/matrix.py) with the official TypeScript MCP
// SDK (@modelcontextprotocol/sdk, installed by scripts/setup-interop.sh at PREFIX/ts-sdk):
// connects over stdio (spawning the given command, with this process's environment, as
// clients pass their entry's `env`) or streamable HTTP, lists the tools, runs one TypeScript
// and one Python execution, and prints what it got as one `MATRIX {json}` line. The
// assertions are the driver's.
//
//     node matrix_client.mjs '{"sdk": DIR, "transport": "stdio", "command": [...], "ts": CODE, "py": CODE}'
//     node matrix_client.mjs '{"sdk": DIR, "transport": "http", "url": URL, "token": T?, ...}'
import path from "node:path";
import { pathToFileURL } from "node:url";

const spec = JSON.parse(process.argv[2]);
const sdk = (p) => import(pathToFileURL(path.join(spec.sdk, "dist/esm", p)).href);
const { Client } = await sdk("client/index.js");

let transport;
if (spec.transport === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  transport = new StdioClientTransport({
    command: spec.command[0],
    args: spec.command.slice(1),
    env: { ...process.env },
    stderr: "inherit",
  });
} else {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  const headers = spec.token ? { Authorization: `Bearer ${spec.token}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers } });
}

const client = new Client({ name: "matrix-ts-sdk", version: "1.0.0" });
await client.connect(transport);
const out = { tools: (await client.listTools()).tools.map((t) => t.name) };
for (const [key, tool] of [["ts", "execute_typescript"], ["py", "execute_python"]]) {
  const r = await client.callTool({ name: tool, arguments: { code: spec[key] } }, undefined, {
    timeout: 120000,
  });
  out[key] = {
    isError: Boolean(r.isError),
    structured: r.structuredContent ?? null,
    text: (r.content ?? []).map((c) => c.text ?? "").join("\n").slice(0, 2000),
  };
}
await client.close();
console.log("MATRIX " + JSON.stringify(out));
