// What code running in code-executor-mcp's sandbox can use besides `tools`: the API of
// crates/js-worker/src/prelude.js, declared for type-checking (`check: true`). Kept beside
// the prelude's definitions: a global added there is declared here.

declare class ToolError extends Error {}
declare class PolicyError extends ToolError {}
declare class LimitError extends ToolError {}
declare class ApprovalDenied extends PolicyError {}
declare class NetworkError extends ToolError {}
declare class MemoryError extends Error {}
declare class DOMException extends Error {
  constructor(message?: string, name?: string);
}

interface Console {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  debug(...data: unknown[]): void;
  trace(...data: unknown[]): void;
  dir(item?: unknown, options?: unknown): void;
  table(data: unknown, columns?: string[]): void;
  assert(condition?: boolean, ...data: unknown[]): void;
  count(label?: string): void;
  countReset(label?: string): void;
  time(label?: string): void;
  timeEnd(label?: string): void;
  timeLog(label?: string, ...data: unknown[]): void;
  group(...data: unknown[]): void;
  groupEnd(): void;
}
declare const console: Console;

declare function setTimeout(handler: (...args: any[]) => void, timeout?: number, ...args: any[]): number;
declare function clearTimeout(id?: number): void;
declare function setInterval(handler: (...args: any[]) => void, timeout?: number, ...args: any[]): number;
declare function clearInterval(id?: number): void;
declare function queueMicrotask(callback: () => void): void;
declare function structuredClone<T>(value: T): T;
declare function atob(data: string): string;
declare function btoa(data: string): string;
declare const performance: { now(): number; readonly timeOrigin: number };
declare const crypto: {
  getRandomValues<T extends Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array>(array: T): T;
  randomUUID(): string;
};

declare class TextEncoder {
  readonly encoding: string;
  encode(input?: string): Uint8Array;
}
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  readonly encoding: string;
  decode(input?: ArrayBuffer | ArrayBufferView, options?: { stream?: boolean }): string;
}
declare class URLSearchParams {
  constructor(init?: string | Record<string, string> | [string, string][] | URLSearchParams);
  append(name: string, value: string): void;
  delete(name: string): void;
  get(name: string): string | null;
  getAll(name: string): string[];
  has(name: string): boolean;
  set(name: string, value: string): void;
  sort(): void;
  toString(): string;
  forEach(callback: (value: string, key: string, parent: URLSearchParams) => void): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
  readonly size: number;
}
declare class URL {
  constructor(url: string | URL, base?: string | URL);
  static canParse(url: string | URL, base?: string | URL): boolean;
  hash: string;
  host: string;
  hostname: string;
  href: string;
  readonly origin: string;
  password: string;
  pathname: string;
  port: string;
  protocol: string;
  search: string;
  readonly searchParams: URLSearchParams;
  username: string;
  toString(): string;
  toJSON(): string;
}

type HeadersInit = Headers | Record<string, string> | [string, string][];
type BodyInit = string | ArrayBuffer | ArrayBufferView | URLSearchParams;
declare class Headers {
  constructor(init?: HeadersInit);
  append(name: string, value: string): void;
  delete(name: string): void;
  get(name: string): string | null;
  has(name: string): boolean;
  set(name: string, value: string): void;
  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}
interface Body {
  readonly bodyUsed: boolean;
  readonly body: { getReader(): { read(): Promise<{ done: boolean; value?: Uint8Array }> } } | null;
  text(): Promise<string>;
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
}
interface RequestInit {
  method?: string;
  headers?: HeadersInit;
  body?: BodyInit | null;
  redirect?: 'follow' | 'manual' | 'error';
  signal?: { readonly aborted: boolean } | null;
}
declare class Request implements Body {
  constructor(input: string | URL | Request, init?: RequestInit);
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly redirect: string;
  readonly bodyUsed: boolean;
  readonly body: Body['body'];
  text(): Promise<string>;
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
  clone(): Request;
}
declare class Response implements Body {
  constructor(body?: BodyInit | null, init?: { status?: number; statusText?: string; headers?: HeadersInit });
  static json(data: unknown, init?: { status?: number; statusText?: string; headers?: HeadersInit }): Response;
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: Headers;
  readonly url: string;
  readonly redirected: boolean;
  readonly type: string;
  readonly bodyUsed: boolean;
  readonly body: Body['body'];
  text(): Promise<string>;
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
  clone(): Response;
}
declare function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;

interface CodeExecutorStats {
  size: number;
  mode: number;
  mtimeMs: number;
  mtime: Date;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}
interface CodeExecutorFsPromises {
  readFile(path: string): Promise<Uint8Array>;
  readFile(path: string, options: string | { encoding: string }): Promise<string>;
  readdir(path: string): Promise<string[]>;
  stat(path: string): Promise<CodeExecutorStats>;
  lstat(path: string): Promise<CodeExecutorStats>;
  writeFile(path: string, data: string | ArrayBuffer | ArrayBufferView, options?: { flag?: string }): Promise<void>;
  appendFile(path: string, data: string | ArrayBuffer | ArrayBufferView): Promise<void>;
  mkdir(path: string, options?: { recursive?: boolean }): Promise<void>;
}
declare const fs: CodeExecutorFsPromises & {
  readFileSync(path: string): Uint8Array;
  readFileSync(path: string, options: string | { encoding: string }): string;
  readdirSync(path: string): string[];
  statSync(path: string): CodeExecutorStats;
  lstatSync(path: string): CodeExecutorStats;
  existsSync(path: string): boolean;
  writeFileSync(path: string, data: string | ArrayBuffer | ArrayBufferView, options?: { flag?: string }): void;
  appendFileSync(path: string, data: string | ArrayBuffer | ArrayBufferView): void;
  mkdirSync(path: string, options?: { recursive?: boolean }): void;
  readonly promises: CodeExecutorFsPromises;
  /** The workspace's path inside the sandbox, or null without one. */
  readonly workspace: string | null;
};

/**
 * Calls an upstream tool by qualified name (`mcp__server__tool`), or by server and tool, and
 * answers with the answer's text (its text blocks joined): the structured value when the text
 * is that same JSON, a JSON object or array text parsed when the tool sends no structured
 * content, any other text as a string; a result with images or resources as its content
 * blocks. The typed proxies `tools.server.tool(args)` answer with the structured result.
 */
declare function callMCPTool(name: string, args?: object): Promise<any>;
declare function callMCPTool(server: string, tool: string, args?: object): Promise<any>;
declare function listServers(): Promise<any>;
declare function searchTools(
  query: string,
  options?: { detail?: 'names' | 'summary' | 'full'; server?: string; limit?: number; cursor?: string },
): Promise<any>;
declare function getToolSchema(name: string): Promise<any>;
declare function discoverMCPTools(): Promise<any>;
declare function store(key: string, value?: unknown): Promise<void>;
declare function load(key: string): Promise<any>;
declare function progress(done: number, total?: number | string, message?: string): Promise<void>;
interface CodeExecutorLlmOptions {
  system?: string;
  maxTokens?: number;
  model?: string;
}
declare const llm: {
  ask(prompt: string, options?: CodeExecutorLlmOptions): Promise<string>;
  think(options: CodeExecutorLlmOptions & { messages: { role: string; content: unknown }[] }): Promise<string>;
};
declare function saveSkill(
  name: string,
  options: { code: string; description: string; language?: 'typescript' | 'python'; inputSchema?: object },
): Promise<any>;
declare function listSkills(): Promise<any>;
declare const skills: { [name: string]: (args?: object) => Promise<any> };
