// The JavaScript side of the worker: the in-sandbox API and the Web API shims.
//
// Evaluated once when the worker starts, before any user code exists. It receives the host
// functions as `host` and returns the three entry points the Rust engine calls; `host` itself
// is never reachable from user code. Nothing here is a security boundary: the host checks
// every request it receives, and the operating system confines the process.
(function (host) {
  'use strict';
  const g = globalThis;
  const define = (obj, name, value) =>
    Object.defineProperty(obj, name, { value, writable: true, configurable: true, enumerable: false });

  // ------------------------------------------------------------------ errors
  // The classes of failed requests, from the host's one table (worker_protocol::CallError),
  // parents first: ours extend Error or each other; the rest are the language's own. A name
  // the table does not have becomes a ToolError of that name, as in Python.
  const errorClasses = new Map([['TypeError', TypeError], ['RangeError', RangeError], ['SyntaxError', SyntaxError]]);
  const ourErrors = {};
  const defineError = (name, Parent) => ({
    [name]: class extends Parent {
      constructor(message, options) {
        super(message, options);
        this.name = name;
      }
    },
  })[name];
  for (const row of JSON.parse(host.errorClasses)) {
    const Cls = row.js ? g[row.js] : defineError(row.name, row.parent ? errorClasses.get(row.parent) : Error);
    errorClasses.set(row.name, Cls);
    if (!row.js) ourErrors[row.name] = Cls;
  }
  // A reply the engine's memory limit could not hold fails its call with this (engine.rs).
  errorClasses.set('MemoryError', defineError('MemoryError', Error));
  const ToolError = errorClasses.get('ToolError');
  function makeError(info) {
    const name = String(info.name);
    let Cls = errorClasses.get(name);
    if (!Cls) {
      Cls = /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? defineError(name, ToolError) : ToolError;
      errorClasses.set(name, Cls);
    }
    return new Cls(info.message);
  }
  class DOMException extends Error {
    constructor(message = '', name = 'Error') {
      super(message);
      this.name = name;
    }
  }

  // ------------------------------------------------------- host round trips
  let nextId = 1;
  const pending = new Map();
  function hostCall(request) {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      const split = request.op === 'tool' ? splitBigStrings(request.args) : null;
      if (split) {
        request = { ...request, args: split.args };
        if (split.bigs.length) {
          // The large strings leave as they are, after the frame's JSON (not quoted by
          // JSON.stringify, a character at a time in QuickJS: 30 ms for 5 MB); a string the
          // engine cannot take (a lone surrogate) means the whole request goes the usual way.
          if (host.call(id, encodeRequest(request), split.marker, split.bigs, split.keys)) return;
          split.bigs.forEach((big, i) => (split.args[split.keys[i]] = big));
        }
      }
      host.call(id, encodeRequest(request));
    });
  }
  // A request as JSON, with JSON.stringify's own failures on what code passed said as ours: a
  // cycle, or nesting too deep for the engine's stack. (Deeper than host.maxDepth levels but
  // within the stack, the engine refuses it at the call with the same RangeError.)
  function encodeRequest(request) {
    try {
      return JSON.stringify(request);
    } catch (e) {
      const what = request.op === 'tool' ? 'the arguments' : 'the values passed';
      const message = e !== null && typeof e === 'object' ? String(e.message) : '';
      if (e instanceof TypeError && /circular/i.test(message)) {
        throw new TypeError(`${requestName(request)}: ${what} refer to themselves (a cycle), which JSON cannot hold: pass a copy without the cycle`);
      }
      if (e instanceof RangeError && /call stack/i.test(message)) {
        throw new RangeError(`${requestName(request)}: ${what} nest more than ${host.maxDepth} levels of arrays and objects, the most a value passed to the host may have: flatten them, or pass the deep part as a JSON string (JSON.stringify)`);
      }
      throw e;
    }
  }
  // What a request asks, as code wrote it (as the engine names it: host.rs, ToolProbe::what).
  function requestName(r) {
    if (r.op !== 'tool') return String(r.op);
    if (r.server != null) return r.shape != null ? `callMCPTool('${r.server}', '${r.name}')` : `tools.${r.server}.${r.name}`;
    return `callMCPTool('${r.name}')`;
  }
  // A tool call's arguments with their large top-level strings taken out: a copy of a plain
  // object (the values read once, in the order JSON.stringify reads them, and the copy is
  // what is sent, so no getter runs twice) where each such string is a marker the engine
  // replaces with null, the string following the frame's JSON. Nothing else changes: an
  // object with its own toJSON, an object of another class, an array or one with many keys
  // goes to JSON.stringify whole (null).
  const BIG_STRING = 32768;
  const MAX_SPLIT_KEYS = 256;
  // At most this many characters are quoted by the engine, outside the engine's memory limit:
  // a call's frame is at most 16 MiB (MAX_WORKER_FRAME_BYTES; the engine refuses a larger one
  // with a RangeError), so more is encoded in the engine's heap as before, within its limit.
  const MAX_SPLIT_CHARS = 16 * 1024 * 1024;
  const { keys: ownKeys, getPrototypeOf, create: createObject } = Object;
  const ObjectPrototype = Object.prototype;
  // Math.random from a generator seeded by the system's randomness: QuickJS seeds its own
  // from the clock in microseconds, so two workers started in the same microsecond drew the
  // same numbers (xoshiro128**, 128 bits of state, two draws per double). Each run seeds it
  // again with the seed the host sends (`reseedRandom`): a replay of the run draws the same.
  let reseedRandom = null;
  {
    const seed = host.randomBytes(16);
    let a = (seed[0] | (seed[1] << 8) | (seed[2] << 16) | (seed[3] << 24)) | 1;
    let b = seed[4] | (seed[5] << 8) | (seed[6] << 16) | (seed[7] << 24);
    let c = seed[8] | (seed[9] << 8) | (seed[10] << 16) | (seed[11] << 24);
    let d = seed[12] | (seed[13] << 8) | (seed[14] << 16) | (seed[15] << 24);
    const rotl = (x, k) => (x << k) | (x >>> (32 - k));
    const next = () => {
      const out = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
      const t = b << 9;
      c ^= a; d ^= b; b ^= c; a ^= d; c ^= t; d = rotl(d, 11);
      return out;
    };
    reseedRandom = (w, x, y, z) => {
      a = w | 1; b = x | 0; c = y | 0; d = z | 0;
      for (let i = 0; i < 8; i++) next();
    };
    Object.defineProperty(Math, 'random', {
      value: function random() {
        return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
      },
      writable: true,
      configurable: true,
      enumerable: false,
    });
  }
  // Drawn on first use from that generator (code replacing Math.random does not choose it);
  // a marker code forged anyway only makes the engine decline (see the engine).
  const random = Math.random;
  let bigMarker = null;
  function splitBigStrings(args) {
    if (args === null || typeof args !== 'object' || typeof args.toJSON === 'function') return null;
    const proto = getPrototypeOf(args);
    if (proto !== ObjectPrototype && proto !== null) return null;
    const names = ownKeys(args);
    if (names.length > MAX_SPLIT_KEYS) return null;
    const split = { marker: null, bigs: [], keys: [], args: createObject(null) };
    let chars = 0;
    for (const k of names) {
      const v = args[k];
      if (typeof v === 'string' && v.length >= BIG_STRING && (chars += v.length) <= MAX_SPLIT_CHARS) {
        bigMarker ??= `\u0000big-${random().toString(36).slice(2)}${random().toString(36).slice(2)}-`;
        split.marker = bigMarker;
        split.args[k] = bigMarker + split.bigs.length;
        split.bigs.push(v);
        split.keys.push(k);
      } else {
        split.args[k] = v;
      }
    }
    return split;
  }
  function deliver(id, ok, payload) {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    const value = JSON.parse(payload);
    if (ok) p.resolve(value);
    else p.reject(makeError(value));
  }
  // A reply whose value the engine decoded itself (a string: QuickJS's JSON.parse is slow on
  // megabytes of text, the engine's decoder is not), handed over as it is.
  function deliverValue(id, value) {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    p.resolve(value);
  }

  // ------------------------------------------------------- formatting/JSON
  // A value as JSON for the host: bigints and symbols as text, functions left out, Maps and
  // Sets as objects and arrays, an object that contains itself (a cycle: one of its own
  // ancestors) as '[Circular]', an object met twice elsewhere (shared, not a cycle) in full
  // each time, and an array or object deeper than host.maxDepth levels as a short text
  // ('[Array(2)]', '[Object]'): the host takes no deeper value, and Python shows a result's
  // deeper levels as text too.
  // `strictFor`: refuse a deeper value (a RangeError) or a cycle (a TypeError) instead,
  // naming that function: what the host keeps must be the value itself.
  function jsonSafe(value, strictFor) {
    // For each object written: the object holding it, and what it was converted from (a Map
    // is written as an object).
    const holders = new WeakMap();
    const from = new WeakMap();
    const depths = new WeakMap();
    return JSON.stringify(value, function (key, v) {
      if (typeof v === 'bigint') return v.toString();
      if (typeof v === 'function') return undefined;
      if (typeof v === 'symbol') return v.toString();
      if (v === null || typeof v !== 'object') return v;
      // `this` is the object holding v: a cycle when v is it or one of its holders (at most
      // host.maxDepth of them).
      for (let a = this; a !== undefined; a = holders.get(a)) {
        if (a === v || from.get(a) === v) {
          if (strictFor) throw new TypeError(`${strictFor}: the value contains itself (a cycle), which JSON cannot hold: pass a copy without the cycle`);
          return '[Circular]';
        }
      }
      // The root's holder has no depth.
      const depth = (depths.get(this) ?? 0) + 1;
      if (depth > host.maxDepth) {
        if (strictFor) throw new RangeError(`${strictFor}: the value nests more than ${host.maxDepth} levels of arrays and objects, the most a value passed to the host may have: flatten it, or pass the deep part as a JSON string (JSON.stringify)`);
        return Array.isArray(v) ? `[Array(${v.length})]` : '[Object]';
      }
      let out = v;
      if (v instanceof Map) out = Object.fromEntries(v);
      else if (v instanceof Set) out = Array.from(v);
      else if (v instanceof Error) out = { name: v.name, message: v.message };
      else if (ArrayBuffer.isView(v) && !(v instanceof DataView)) out = Array.from(v);
      if (out !== null && typeof out === 'object') {
        depths.set(out, depth);
        holders.set(out, this);
        if (out !== v) from.set(out, v);
      }
      return out;
    });
  }
  function inspect(v) {
    if (typeof v === 'string') return v;
    if (v instanceof Error) {
      const head = `${v.name}: ${v.message}`;
      return v.stack ? `${head}\n${String(v.stack).trimEnd()}` : head;
    }
    if (typeof v === 'function') return `[Function ${v.name || 'anonymous'}]`;
    if (typeof v === 'bigint') return `${v}n`;
    if (typeof v === 'symbol' || v === undefined) return String(v);
    if (v !== null && typeof v === 'object') {
      try {
        const s = jsonSafe(v);
        return s === undefined ? String(v) : s;
      } catch (e) {
        return String(v);
      }
    }
    return String(v);
  }
  function format(args) {
    if (args.length === 0) return '';
    let rest = args;
    let out = '';
    if (typeof args[0] === 'string' && args[0].includes('%')) {
      let i = 1;
      out = args[0].replace(/%([sdifoOjc%])/g, (m, c) => {
        if (c === '%') return '%';
        if (i >= args.length) return m;
        const a = args[i++];
        switch (c) {
          case 's': return typeof a === 'string' ? a : inspect(a);
          case 'd': case 'i': return String(parseInt(a, 10));
          case 'f': return String(parseFloat(a));
          case 'c': return '';
          default: return inspect(a);
        }
      });
      rest = args.slice(i);
      if (rest.length === 0) return out;
      return out + ' ' + rest.map(inspect).join(' ');
    }
    return rest.map(inspect).join(' ');
  }
  const counters = new Map();
  const timersByLabel = new Map();
  const console = {};
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    define(console, level, (...args) => host.log(level, format(args)));
  }
  define(console, 'trace', (...args) => host.log('debug', format(args)));
  define(console, 'dir', (v) => host.log('log', inspect(v)));
  define(console, 'table', (v) => host.log('log', inspect(v)));
  define(console, 'assert', (cond, ...args) => {
    if (!cond) host.log('error', 'Assertion failed' + (args.length ? ': ' + format(args) : ''));
  });
  define(console, 'count', (label = 'default') => {
    const n = (counters.get(label) || 0) + 1;
    counters.set(label, n);
    host.log('log', `${label}: ${n}`);
  });
  define(console, 'time', (label = 'default') => timersByLabel.set(label, host.now()));
  define(console, 'timeEnd', (label = 'default') => {
    const t = timersByLabel.get(label);
    if (t === undefined) return;
    timersByLabel.delete(label);
    host.log('log', `${label}: ${(host.now() - t).toFixed(3)}ms`);
  });

  // ------------------------------------------------------------------ timers
  let nextTimer = 1;
  const timers = new Map();
  function addTimer(fn, ms, args, repeat) {
    if (typeof fn !== 'function') throw new TypeError('setTimeout/setInterval need a function');
    const id = nextTimer++;
    const delay = Math.max(0, Number(ms) || 0);
    timers.set(id, { fn, args, delay, repeat });
    host.setTimer(id, delay);
    return id;
  }
  function fireTimer(id) {
    const t = timers.get(id);
    if (!t) return;
    if (t.repeat) host.setTimer(id, Math.max(1, t.delay));
    else timers.delete(id);
    t.fn(...t.args);
  }
  const clearTimer = (id) => { timers.delete(id); };

  // ------------------------------------------------------------ text codecs
  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input = '') {
      const s = String(input);
      const out = [];
      for (let i = 0; i < s.length; i++) {
        let c = s.charCodeAt(i);
        if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
          const d = s.charCodeAt(i + 1);
          if (d >= 0xdc00 && d <= 0xdfff) {
            c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
            i++;
          } else c = 0xfffd;
        } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
        if (c < 0x80) out.push(c);
        else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
        else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
        else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      }
      return new Uint8Array(out);
    }
    encodeInto(input, dest) {
      const bytes = this.encode(input);
      const n = Math.min(bytes.length, dest.length);
      dest.set(bytes.subarray(0, n));
      return { read: String(input).length, written: n };
    }
  }
  class TextDecoder {
    constructor(label = 'utf-8', options = {}) {
      const l = String(label).toLowerCase();
      if (l !== 'utf-8' && l !== 'utf8' && l !== 'unicode-1-1-utf-8') {
        throw new RangeError(`TextDecoder: only utf-8 is supported, not "${label}"`);
      }
      this.fatal = !!options.fatal;
      this.ignoreBOM = !!options.ignoreBOM;
    }
    get encoding() { return 'utf-8'; }
    decode(input) {
      if (input === undefined) return '';
      let b;
      if (input instanceof ArrayBuffer) b = new Uint8Array(input);
      else if (ArrayBuffer.isView(input)) b = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
      else throw new TypeError('TextDecoder.decode expects an ArrayBuffer or a view of one');
      let i = 0;
      if (!this.ignoreBOM && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) i = 3;
      const parts = [];
      let chunk = [];
      const bad = () => {
        if (this.fatal) throw new TypeError('The encoded data was not valid utf-8');
        chunk.push(0xfffd);
      };
      while (i < b.length) {
        const c = b[i];
        let need = 0, cp = 0, min = 0;
        if (c < 0x80) { chunk.push(c); i++; }
        else {
          if (c >= 0xc2 && c <= 0xdf) { need = 1; cp = c & 31; min = 0x80; }
          else if (c >= 0xe0 && c <= 0xef) { need = 2; cp = c & 15; min = 0x800; }
          else if (c >= 0xf0 && c <= 0xf4) { need = 3; cp = c & 7; min = 0x10000; }
          else { bad(); i++; continue; }
          let j = 1;
          for (; j <= need; j++) {
            const d = b[i + j];
            if (d === undefined || (d & 0xc0) !== 0x80) break;
            cp = (cp << 6) | (d & 63);
          }
          if (j <= need || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            bad();
            i += Math.max(1, j);
            continue;
          }
          i += need + 1;
          if (cp >= 0x10000) {
            cp -= 0x10000;
            chunk.push(0xd800 + (cp >> 10), 0xdc00 + (cp & 1023));
          } else chunk.push(cp);
        }
        if (chunk.length > 8192) { parts.push(String.fromCharCode(...chunk)); chunk = []; }
      }
      parts.push(String.fromCharCode(...chunk));
      return parts.join('');
    }
  }

  // ------------------------------------------------------------------ base64
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  function btoa(input) {
    const s = String(input);
    let out = '';
    for (let i = 0; i < s.length; i += 3) {
      const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
      if (a > 255 || b > 255 || c > 255) {
        throw new DOMException('btoa: the string contains characters outside Latin1', 'InvalidCharacterError');
      }
      const n = (a << 16) | ((b || 0) << 8) | (c || 0);
      out += B64[n >> 18] + B64[(n >> 12) & 63] +
        (i + 1 < s.length ? B64[(n >> 6) & 63] : '=') + (i + 2 < s.length ? B64[n & 63] : '=');
    }
    return out;
  }
  function atob(input) {
    let s = String(input).replace(/[\t\n\f\r ]/g, '');
    if (s.length % 4 === 0) s = s.replace(/==?$/, '');
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) {
      throw new DOMException('atob: the string is not valid base64', 'InvalidCharacterError');
    }
    let out = '';
    let buf = 0, bits = 0;
    for (const ch of s) {
      buf = (buf << 6) | B64.indexOf(ch);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out += String.fromCharCode((buf >> bits) & 255);
      }
    }
    return out;
  }

  // ------------------------------------------------------ URL and params
  const formEncode = (s) => encodeURIComponent(s).replace(/%20/g, '+')
    .replace(/[!'()~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  const formDecode = (s) => {
    try { return decodeURIComponent(s.replace(/\+/g, ' ')); } catch (e) { return s; }
  };
  class URLSearchParams {
    #list = [];
    #url = null;
    constructor(init = '') {
      if (typeof init === 'string') this.#parse(init);
      else if (init instanceof URLSearchParams) this.#list = init.#list.map((p) => [p[0], p[1]]);
      else if (init && typeof init[Symbol.iterator] === 'function') {
        for (const pair of init) {
          const p = Array.from(pair);
          if (p.length !== 2) throw new TypeError('URLSearchParams: each pair needs exactly two items');
          this.#list.push([String(p[0]), String(p[1])]);
        }
      } else if (init && typeof init === 'object') {
        for (const k of Object.keys(init)) this.#list.push([k, String(init[k])]);
      }
    }
    static _attach(params, url) { params.#url = url; return params; }
    _reset(query) { this.#list = []; this.#parse(query); }
    #parse(s) {
      if (s.startsWith('?')) s = s.slice(1);
      for (const part of s.split('&')) {
        if (!part) continue;
        const i = part.indexOf('=');
        const k = i < 0 ? part : part.slice(0, i);
        const v = i < 0 ? '' : part.slice(i + 1);
        this.#list.push([formDecode(k), formDecode(v)]);
      }
    }
    #update() { if (this.#url) this.#url._setQuery(this.toString()); }
    get size() { return this.#list.length; }
    append(k, v) { this.#list.push([String(k), String(v)]); this.#update(); }
    delete(k, v) {
      this.#list = this.#list.filter((p) => !(p[0] === String(k) && (v === undefined || p[1] === String(v))));
      this.#update();
    }
    get(k) { const p = this.#list.find((p) => p[0] === String(k)); return p ? p[1] : null; }
    getAll(k) { return this.#list.filter((p) => p[0] === String(k)).map((p) => p[1]); }
    has(k, v) { return this.#list.some((p) => p[0] === String(k) && (v === undefined || p[1] === String(v))); }
    set(k, v) {
      k = String(k);
      const i = this.#list.findIndex((p) => p[0] === k);
      if (i < 0) this.#list.push([k, String(v)]);
      else {
        this.#list[i][1] = String(v);
        this.#list = this.#list.filter((p, j) => j <= i || p[0] !== k);
      }
      this.#update();
    }
    sort() { this.#list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)); this.#update(); }
    forEach(fn, thisArg) { for (const [k, v] of this.#list) fn.call(thisArg, v, k, this); }
    *entries() { for (const p of this.#list) yield [p[0], p[1]]; }
    *keys() { for (const p of this.#list) yield p[0]; }
    *values() { for (const p of this.#list) yield p[1]; }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return this.#list.map(([k, v]) => formEncode(k) + '=' + formEncode(v)).join('&'); }
  }
  const SPECIAL = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21', 'file:': '' };
  const URL_RE = /^([a-zA-Z][a-zA-Z\d+\-.]*:)(?:\/\/(?:([^:@/?#]*)(?::([^@/?#]*))?@)?(\[[^\]]*\]|[^:/?#]*)(?::(\d*))?)?([^?#]*)(\?[^#]*)?(#.*)?$/;
  const encodePath = (p) => p.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g, (c) => encodeURIComponent(c));
  const encodeQuery = (q) => q.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]/g, (c) => encodeURIComponent(c));
  function removeDots(path) {
    const out = [];
    const segs = path.split('/');
    for (let i = 0; i < segs.length; i++) {
      const s = segs[i];
      if (s === '..') { if (out.length > 1) out.pop(); if (i === segs.length - 1) out.push(''); }
      else if (s === '.') { if (i === segs.length - 1) out.push(''); }
      else out.push(s);
    }
    return out.join('/');
  }
  class URL {
    #p;
    #params;
    constructor(input, base) {
      const s = String(input).trim();
      let m = URL_RE.exec(s);
      if (!m) {
        if (base === undefined) throw new TypeError(`Invalid URL: ${s}`);
        const b = base instanceof URL ? base : new URL(base);
        m = URL_RE.exec(URL.#resolve(s, b));
        if (!m) throw new TypeError(`Invalid URL: ${s}`);
      }
      const protocol = m[1].toLowerCase();
      const special = protocol in SPECIAL;
      const hasAuthority = m[4] !== undefined;
      if (special && protocol !== 'file:' && !m[4]) throw new TypeError(`Invalid URL: ${s}`);
      const port = m[5] || '';
      if (port && Number(port) > 65535) throw new TypeError(`Invalid URL: ${s}`);
      let pathname = m[6] || '';
      if (special) pathname = removeDots(pathname.replace(/\\/g, '/') || '/');
      this.#p = {
        protocol,
        username: m[2] || '',
        password: m[3] || '',
        hostname: hasAuthority ? m[4].toLowerCase() : '',
        port: SPECIAL[protocol] === port ? '' : port,
        pathname: encodePath(pathname),
        search: m[7] && m[7] !== '?' ? encodeQuery(m[7]) : '',
        hash: m[8] && m[8] !== '#' ? m[8] : '',
        hasAuthority,
      };
      this.#params = URLSearchParams._attach(new URLSearchParams(this.#p.search), this);
    }
    static #resolve(rel, b) {
      if (rel.startsWith('//')) return b.protocol + rel;
      const authority = b.protocol + (b.#p.hasAuthority ? '//' + b.#authority() : '');
      if (rel === '') return b.href.replace(/#.*$/, '');
      if (rel.startsWith('#')) return b.href.replace(/#.*$/, '') + rel;
      if (rel.startsWith('?')) return authority + b.pathname + rel;
      if (rel.startsWith('/')) return authority + rel;
      const dir = b.pathname.replace(/[^/]*$/, '');
      return authority + (dir || '/') + rel;
    }
    static canParse(input, base) {
      try { new URL(input, base); return true; } catch (e) { return false; }
    }
    #authority() {
      const p = this.#p;
      const cred = p.username ? p.username + (p.password ? ':' + p.password : '') + '@' : '';
      return cred + p.hostname + (p.port ? ':' + p.port : '');
    }
    _setQuery(q) { this.#p.search = q ? '?' + q : ''; }
    get href() {
      const p = this.#p;
      return p.protocol + (p.hasAuthority ? '//' + this.#authority() : '') + p.pathname + p.search + p.hash;
    }
    set href(v) { const u = new URL(v); this.#p = u.#p; this.#params._reset(this.#p.search); }
    get protocol() { return this.#p.protocol; }
    get username() { return this.#p.username; }
    get password() { return this.#p.password; }
    get host() { return this.#p.hostname + (this.#p.port ? ':' + this.#p.port : ''); }
    get hostname() { return this.#p.hostname; }
    set hostname(v) { this.#p.hostname = String(v).toLowerCase(); }
    get port() { return this.#p.port; }
    set port(v) { const s = String(v); this.#p.port = SPECIAL[this.#p.protocol] === s ? '' : s; }
    get pathname() { return this.#p.pathname; }
    set pathname(v) {
      let s = String(v);
      if (this.#p.protocol in SPECIAL && !s.startsWith('/')) s = '/' + s;
      this.#p.pathname = encodePath(s);
    }
    get search() { return this.#p.search; }
    set search(v) {
      const s = String(v);
      this.#p.search = s && s !== '?' ? encodeQuery(s.startsWith('?') ? s : '?' + s) : '';
      this.#params._reset(this.#p.search);
    }
    get searchParams() { return this.#params; }
    get hash() { return this.#p.hash; }
    set hash(v) { const s = String(v); this.#p.hash = s && s !== '#' ? (s.startsWith('#') ? s : '#' + s) : ''; }
    get origin() {
      const p = this.#p;
      return p.protocol in SPECIAL && p.protocol !== 'file:' ? p.protocol + '//' + this.host : 'null';
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
  }

  // ------------------------------------------------------------ structuredClone
  function structuredClone(value) {
    const memo = new Map();
    const clone = (v) => {
      if (v === null || (typeof v !== 'object' && typeof v !== 'function' && typeof v !== 'symbol')) return v;
      if (typeof v === 'function' || typeof v === 'symbol') {
        throw new DOMException(`${String(v)} could not be cloned`, 'DataCloneError');
      }
      if (memo.has(v)) return memo.get(v);
      let out;
      if (v instanceof Date) out = new Date(v.getTime());
      else if (v instanceof RegExp) out = new RegExp(v.source, v.flags);
      else if (v instanceof ArrayBuffer) out = v.slice(0);
      else if (v instanceof DataView) out = new DataView(clone(v.buffer), v.byteOffset, v.byteLength);
      else if (ArrayBuffer.isView(v)) out = new v.constructor(clone(v.buffer), v.byteOffset, v.length);
      else if (v instanceof Map) { out = new Map(); memo.set(v, out); for (const [k, x] of v) out.set(clone(k), clone(x)); return out; }
      else if (v instanceof Set) { out = new Set(); memo.set(v, out); for (const x of v) out.add(clone(x)); return out; }
      else if (v instanceof Error) {
        const Cls = errorClasses.get(v.name) || Error;
        out = new Cls(v.message);
        out.name = v.name;
        if (v.stack) out.stack = v.stack;
      } else if (v instanceof Boolean || v instanceof Number || v instanceof String) out = Object(v.valueOf());
      else if (Array.isArray(v)) {
        out = new Array(v.length);
        memo.set(v, out);
        for (let i = 0; i < v.length; i++) if (i in v) out[i] = clone(v[i]);
        return out;
      } else {
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) {
          if (v instanceof WeakMap || v instanceof WeakSet || v instanceof Promise) {
            throw new DOMException(`${Object.prototype.toString.call(v)} could not be cloned`, 'DataCloneError');
          }
        }
        out = {};
        memo.set(v, out);
        for (const k of Object.keys(v)) out[k] = clone(v[k]);
        return out;
      }
      memo.set(v, out);
      return out;
    };
    return clone(value);
  }

  // ------------------------------------------------------------------ crypto
  const crypto = {
    getRandomValues(arr) {
      if (!ArrayBuffer.isView(arr) || arr instanceof Float32Array || arr instanceof Float64Array || arr instanceof DataView) {
        throw new TypeError('crypto.getRandomValues expects an integer typed array');
      }
      if (arr.byteLength > 65536) {
        throw new DOMException('crypto.getRandomValues: at most 65536 bytes at a time', 'QuotaExceededError');
      }
      const bytes = host.randomBytes(arr.byteLength);
      new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength).set(bytes);
      return arr;
    },
    randomUUID() {
      const b = host.randomBytes(16);
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      const h = b.map((x) => x.toString(16).padStart(2, '0')).join('');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    },
  };

  // --------------------------------------------------------------- MCP API
  // `callMCPTool` answers in the documents' shape, the answer's text (`shape: 'text'`: JSON
  // parsed when the text is the data, else the string); the typed proxies `tools.s.t(args)`
  // keep the structured shape (`structuredContent`, else the parsed text).
  function callMCPTool(a, b, c) {
    return callTool(a, b, c, 'text');
  }
  function callTool(a, b, c, shape) {
    let request;
    if (typeof b === 'string') request = { op: 'tool', server: String(a), name: b, args: c === undefined ? {} : c };
    else request = { op: 'tool', name: String(a), args: b === undefined ? {} : b };
    if (request.args === null || typeof request.args !== 'object' || Array.isArray(request.args)) {
      return Promise.reject(new TypeError(`callMCPTool: arguments must be an object, got ${inspect(request.args)}`));
    }
    if (shape !== undefined) request.shape = shape;
    return hostCall(request);
  }
  // Options objects of the sandbox's functions: a name it does not take is a TypeError
  // naming it and the accepted ones (as Python's keyword arguments are), never ignored.
  function checkOptions(fn, o, accepted, what = 'options') {
    if (o === undefined || o === null) return {};
    if (typeof o !== 'object' || Array.isArray(o)) throw new TypeError(`${fn}: ${what} must be an object, got ${inspect(o)}`);
    for (const k of ownKeys(o)) {
      if (!accepted.includes(k)) {
        throw new TypeError(`${fn}: unknown option ${JSON.stringify(k)} in ${what}; accepted: ${accepted.join(', ') || 'none'}`);
      }
    }
    return o;
  }
  // One option under two names (the documents' and ours): both given must agree.
  function either(fn, o, ...names) {
    const given = names.filter((n) => o[n] !== undefined);
    if (given.some((n) => o[n] !== o[given[0]])) {
      throw new TypeError(`${fn}: ${given.join(' and ')} are the same option and disagree; pass one`);
    }
    return given.length ? o[given[0]] : undefined;
  }

  // Discovery is answered at once: `listServers().available`, `getToolSchema(s, t).inputSchema`
  // and `discoverMCPTools().length` work without `await`, and the value is also a promise of
  // itself (`await`, `.then`, `.catch`, `.finally`), as it always was. A failed request
  // gives a value that throws its error on any use (and rejects when awaited).
  function failedNow(error) {
    const reject = () => Promise.reject(error);
    const handler = {
      get(t, k) {
        if (k === 'then') return (f, r) => reject().then(f, r);
        if (k === 'catch') return (r) => reject().catch(r);
        if (k === 'finally') return (f) => reject().finally(f);
        throw error;
      },
      has() { throw error; },
      ownKeys() { throw error; },
    };
    return new Proxy({}, handler);
  }
  function answerNow(request, build = (v) => v) {
    let text;
    try {
      text = host.ask(encodeRequest(request));
    } catch (e) {
      return failedNow(e);
    }
    if (text[0] !== '1') return failedNow(makeError(JSON.parse(text.slice(1))));
    text = text.slice(1);
    const value = build(JSON.parse(text));
    if (value === null || typeof value !== 'object') return value;
    // Awaiting gives an equal value without these three (a value with `then` would be
    // awaited again, forever).
    const fresh = () => Promise.resolve(build(JSON.parse(text)));
    define(value, 'then', (f, r) => fresh().then(f, r));
    define(value, 'catch', (r) => fresh().catch(r));
    define(value, 'finally', (f) => fresh().finally(f));
    return value;
  }
  function listServers(...extra) {
    if (extra.length) return failedNow(new TypeError(`listServers: takes no arguments, got ${extra.length}`));
    return answerNow({ op: 'list_servers' });
  }
  function searchTools(query, options) {
    try {
      if (query === undefined || query === null) query = '';
      if (typeof query !== 'string') throw new TypeError(`searchTools: the query must be a string, got ${inspect(query)}`);
      const o = checkOptions('searchTools', options, ['detail', 'server', 'limit', 'cursor']);
      for (const k of ['detail', 'server', 'cursor']) {
        if (o[k] !== undefined && typeof o[k] !== 'string') throw new TypeError(`searchTools: ${k} must be a string, got ${inspect(o[k])}`);
      }
      if (o.limit !== undefined && (!Number.isInteger(o.limit) || o.limit < 1)) {
        throw new TypeError(`searchTools: limit must be a positive integer, got ${inspect(o.limit)}`);
      }
      return answerNow({ op: 'search_tools', query, detail: o.detail, server: o.server, limit: o.limit, cursor: o.cursor });
    } catch (e) { return failedNow(e); }
  }
  // `getToolSchema('mcp__server__tool')` or `getToolSchema(server, tool)`.
  function getToolSchema(a, b, ...extra) {
    const usage = "getToolSchema: pass 'mcp__server__tool', or (server, tool)";
    if (extra.length || typeof a !== 'string' || (b !== undefined && typeof b !== 'string')) {
      return failedNow(new TypeError(`${usage}; got (${[...arguments].map(inspect).join(', ')})`));
    }
    return answerNow(b === undefined ? { op: 'get_tool_schema', name: a } : { op: 'get_tool_schema', server: a, name: b });
  }
  // Every tool this run may call, as an array of {name: 'mcp__server__tool', server, tool,
  // description, inputSchema, signature, ...}; the former shape's keys stay readable on it:
  // `.tools` (the array itself) and `.unavailable` (servers that did not start), when some.
  function toolList(answer) {
    const list = Array.isArray(answer && answer.tools) ? answer.tools : [];
    define(list, 'tools', list);
    if (answer && answer.unavailable !== undefined) define(list, 'unavailable', answer.unavailable);
    return list;
  }
  function discoverMCPTools(options, ...extra) {
    try {
      if (extra.length) throw new TypeError(`discoverMCPTools: takes no arguments, got ${arguments.length}`);
      checkOptions('discoverMCPTools', options, []);
    } catch (e) { return failedNow(e); }
    return answerNow({ op: 'discover_tools' }, toolList);
  }
  // Values kept on the host for the session's later executions (they survive the worker).
  function store(key, value) {
    if (typeof key !== 'string') return Promise.reject(new TypeError(`store: the key must be a string, got ${inspect(key)}`));
    if (value === undefined) return hostCall({ op: 'store', key, delete: true }).then(() => undefined);
    let text;
    try {
      text = jsonSafe(value, 'store');
    } catch (e) {
      return Promise.reject(e);
    }
    return hostCall({ op: 'store', key, value: text === undefined ? null : JSON.parse(text) }).then(() => undefined);
  }
  function load(key) {
    if (typeof key !== 'string') return Promise.reject(new TypeError(`load: the key must be a string, got ${inspect(key)}`));
    return hostCall({ op: 'load', key }).then((r) => (r.found ? r.value : undefined));
  }

  // Skills: code saved for later (`saveSkill`), listed (`listSkills`) and called
  // (`skills.name(args)`, whatever the skill's language), each run as an execution of its own.
  function saveSkill(name, options = {}) {
    let o;
    try {
      o = checkOptions('saveSkill', options, ['code', 'description', 'inputSchema', 'language']);
    } catch (e) { return Promise.reject(e); }
    if (typeof name !== 'string') return Promise.reject(new TypeError(`saveSkill: the name must be a string, got ${inspect(name)}`));
    if (typeof o.code !== 'string') return Promise.reject(new TypeError('saveSkill: options.code must be the skill\'s source, a string'));
    if (typeof o.description !== 'string') return Promise.reject(new TypeError('saveSkill: options.description must say what the skill does and when to use it'));
    const request = { op: 'save_skill', name, code: o.code, description: o.description, language: o.language === undefined ? 'typescript' : String(o.language) };
    if (o.inputSchema !== undefined) request.input_schema = o.inputSchema;
    return hostCall(request);
  }
  const listSkills = () => hostCall({ op: 'list_skills' });
  function callSkill(name, args) {
    if (args === undefined) args = {};
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      return Promise.reject(new TypeError(`skills.${name}: arguments must be an object, got ${inspect(args)}`));
    }
    return hostCall({ op: 'run_skill', name, args }).then((r) => {
      for (const w of r.warnings || []) console.warn(`[skill ${name}] ${w}`);
      for (const l of r.logs || []) console.log(`[skill ${name}] ${l}`);
      return r.result;
    });
  }
  const skills = new Proxy(Object.create(null), {
    get: (_, name) => (typeof name === 'string' && name !== 'then' ? (args) => callSkill(name, args) : undefined),
    has: () => false,
    ownKeys: () => [],
  });

  // How far the code is: the host keeps the latest for whoever polls the execution and, when
  // the client asked for progress, tells it (at a bounded rate). Resolves when the host has it.
  function progress(done, total, message) {
    if (typeof total === 'string' && message === undefined) [total, message] = [undefined, total];
    const finite = (v) => typeof v === 'number' && Number.isFinite(v);
    if (!finite(done) || done < 0) return Promise.reject(new RangeError(`progress: done must be a finite number >= 0, got ${inspect(done)}`));
    if (total !== undefined && total !== null && (!finite(total) || total <= 0)) {
      return Promise.reject(new RangeError(`progress: total must be a finite number > 0, got ${inspect(total)}`));
    }
    const request = { op: 'progress', done };
    if (total !== undefined && total !== null) request.total = total;
    if (message !== undefined && message !== null) request.message = String(message);
    return hostCall(request).then(() => undefined);
  }
  // Model calls (`llm.ask(prompt, {systemPrompt, maxTokens, model})`, `llm.think({messages,
  // systemPrompt, maxTokens, model})`): answered by the client's sampling or the configured
  // provider, as text. `system` is `systemPrompt`'s other name; Python's `system_prompt` and
  // `max_tokens` are taken too. Any other option is a TypeError.
  const LLM_OPTIONS = ['systemPrompt', 'system', 'maxTokens', 'model', 'system_prompt', 'max_tokens'];
  function llmOptions(fn, o, extra = []) {
    o = checkOptions(fn, o, [...extra, ...LLM_OPTIONS]);
    const out = {};
    const system = either(fn, o, 'systemPrompt', 'system', 'system_prompt');
    if (system !== undefined && system !== null) {
      if (typeof system !== 'string') throw new TypeError(`${fn}: systemPrompt must be a string, got ${inspect(system)}`);
      if (system !== '') out.system = system;
    }
    const maxTokens = either(fn, o, 'maxTokens', 'max_tokens');
    if (maxTokens !== undefined && maxTokens !== null) {
      if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new TypeError(`${fn}: maxTokens must be a positive integer, got ${inspect(maxTokens)}`);
      out.max_tokens = maxTokens;
    }
    if (o.model !== undefined && o.model !== null) {
      if (typeof o.model !== 'string') throw new TypeError(`${fn}: model must be a string, got ${inspect(o.model)}`);
      if (o.model !== '') out.model = o.model;
    }
    return out;
  }
  const llm = Object.freeze({
    ask(prompt, options, ...extra) {
      try {
        if (extra.length) throw new TypeError(`llm.ask: pass (prompt, options?), got ${arguments.length} arguments`);
        if (typeof prompt !== 'string') throw new TypeError(`llm.ask: the prompt must be a string, got ${inspect(prompt)}; pass the text (a field of it, or JSON.stringify(value))`);
        return hostCall({ op: 'llm', messages: [{ role: 'user', content: prompt }], ...llmOptions('llm.ask', options) });
      } catch (e) { return Promise.reject(e); }
    },
    // `llm.think({messages, ...options})`, or Python's order: `llm.think(messages, options?)`.
    think(first, second, ...extra) {
      try {
        const usage = 'llm.think: pass {messages: [{role, content}], systemPrompt?, maxTokens?, model?}';
        let options = first;
        if (Array.isArray(first)) options = { ...checkOptions('llm.think', second, LLM_OPTIONS), messages: first };
        else if (second !== undefined || extra.length) throw new TypeError(`${usage} (one argument), got ${arguments.length} arguments`);
        if (options === null || typeof options !== 'object' || !Array.isArray(options.messages)) {
          throw new TypeError(`${usage}, got ${inspect(first)}`);
        }
        const rest = llmOptions('llm.think', options, ['messages']);
        const messages = options.messages.map((m, i) => {
          if (m === null || typeof m !== 'object' || Array.isArray(m)) throw new TypeError(`llm.think: messages[${i}] must be {role, content}, got ${inspect(m)}`);
          checkOptions('llm.think', m, ['role', 'content'], `messages[${i}]`);
          if (typeof m.role !== 'string') throw new TypeError(`llm.think: messages[${i}].role must be "user" or "assistant", got ${inspect(m.role)}`);
          // A prompt is text: an object here (a tool's structured result, say) would reach the
          // model as "[object Object]" or as JSON it was not meant to read; say so instead.
          if (typeof m.content !== 'string') {
            throw new TypeError(`llm.think: messages[${i}].content must be a string, got ${inspect(m.content)}; pass the text (a field of it, or JSON.stringify(value))`);
          }
          return { role: m.role, content: m.content };
        });
        return hostCall({ op: 'llm', messages, ...rest });
      } catch (e) { return Promise.reject(e); }
    },
  });

  // `tools.server.tool(args)`: names with characters that are not valid in identifiers are
  // reachable both as written (tools['my-server']['get.page']) and in their identifier form,
  // each such character replaced by `_` (tools.my_server.get_page); the worker computes those
  // forms as the host does.
  const PASS = new Set(['then', 'toJSON', 'constructor', 'inspect', 'valueOf', 'toString']);
  const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

  // One tool's function. `signature` is the tool's TypeScript declaration, from its JSON
  // Schemas, asked of the host when first read (for a server not started yet, the host
  // starts it to answer, as a call would).
  function toolFunction(server, tool) {
    let declared;
    const signature = () =>
      declared ??= host.signature(server, tool) ?? `function ${tool}(args?: object): Promise<unknown>`;
    const fn = (args) => callTool(server, tool, args);
    Object.defineProperty(fn, 'name', { value: tool });
    Object.defineProperty(fn, 'signature', { get: signature });
    Object.defineProperty(fn, 'toString', { value: signature });
    return fn;
  }

  // `tools.server`: its tools by name and identifier form. Any other name (a server not
  // started yet, whose tools are not known; a name the server does not have; a server that is
  // not configured, `at` null) is a function too, which the host resolves when called: an
  // unknown tool is then the host's one ToolError naming the nearest names, whenever and
  // however it is reached. Reading a name never throws, so `typeof`, `await` (`then`) and
  // `String()` behave as on plain objects. Names are looked up in the worker one at a time,
  // so a server with hundreds of tools costs nothing until one is used.
  function serverProxy(server, at) {
    const made = new Map(); // binding index -> its function
    const byName = new Map(); // name asked -> its function, or undefined for no tool
    const lazy = new Map(); // any other name asked -> its function, resolved by the host
    const tool = (prop) => {
      if (typeof prop !== 'string' || at === null) return undefined;
      if (byName.has(prop)) return byName.get(prop);
      const index = host.tool(at, prop);
      if (index >= 0 && !made.has(index)) made.set(index, toolFunction(server, host.toolName(index)));
      const fn = index >= 0 ? made.get(index) : undefined;
      byName.set(prop, fn);
      return fn;
    };
    return new Proxy({}, {
      get(t, prop, recv) {
        if (typeof prop === 'symbol' || own(t, prop)) return Reflect.get(t, prop, recv);
        const fn = tool(prop);
        if (fn) return fn;
        if (PASS.has(prop)) return Reflect.get(t, prop, recv);
        if (!lazy.has(prop)) lazy.set(prop, toolFunction(server, prop));
        return lazy.get(prop);
      },
      has: (t, prop) => own(t, prop) || tool(prop) !== undefined,
      ownKeys: (t) => [...new Set([...(at === null ? [] : host.toolKeys(at)), ...Reflect.ownKeys(t)])],
      getOwnPropertyDescriptor(t, prop) {
        if (own(t, prop)) return Reflect.getOwnPropertyDescriptor(t, prop);
        const fn = tool(prop);
        return fn && { value: fn, writable: true, enumerable: true, configurable: true };
      },
    });
  }

  // The `tools` object, made when code first touches it. A name that is no configured server
  // is a server proxy too (not listed, not `in`), whose calls the host refuses as an unknown
  // tool naming the nearest servers.
  function buildTools() {
    const list = JSON.parse(host.servers());
    const servers = {};
    list.forEach(([server, id], at) => {
      let proxy;
      const get = () => proxy || (proxy = serverProxy(server, at));
      for (const key of [server, id]) {
        if (!own(servers, key)) Object.defineProperty(servers, key, { get, enumerable: true, configurable: true });
      }
    });
    const unknown = new Map();
    return new Proxy(servers, {
      get(t, prop, recv) {
        if (typeof prop === 'symbol' || prop in t || PASS.has(prop)) return Reflect.get(t, prop, recv);
        if (!unknown.has(prop)) unknown.set(prop, serverProxy(prop, null));
        return unknown.get(prop);
      },
    });
  }

  // The run's `tools`, made on first use (by code or by an import).
  let runTools = null;
  const toolsNow = () => runTools || (runTools = buildTools());

  // ------------------------------------------------------------ modules
  // `import { filesystem } from './mcp-wrappers'` and the like: the host rewrote each import
  // of a name this code does not declare itself into a call of this (js_worker::modules).
  // Nothing is read from disk: a module is one of the wrappers the product line's wizard
  // generates, served by the typed proxies. Its path's last name says which (after dropping
  // `.ts`/`.js` and `/index`):
  //   './mcp-wrappers' (or mcp_wrappers, mcp-tools, mcp_tools, wrappers): every server, by
  //     name, identifier or camelCase form (`tools` itself);
  //   a configured server's name ('./mcp-wrappers/filesystem', './lib/mcp/zen'): that
  //     server's tools (`tools.zen`), by name, identifier or camelCase form (`readFile`);
  //   a tool of the server named before it ('./mcp-wrappers/filesystem/read_file'): the
  //     server's tools too, as the generated per-tool file exports its function.
  // The default and namespace imports are the module itself. Anything else is a TypeError
  // naming what exists.
  const WRAPPER_ROOTS = new Set(['mcp-wrappers', 'mcp_wrappers', 'mcp-tools', 'mcp_tools', 'wrappers']);
  const camel = (name) => {
    let s = '';
    let boundary = false;
    for (const c of name) {
      if (/^[A-Za-z0-9$]$/.test(c)) {
        s += boundary && s ? c.toUpperCase() : c;
        boundary = false;
      } else boundary = true;
    }
    return /^[0-9]/.test(s) ? '_' + s : s;
  };
  function serverIn(list, name) {
    for (const form of [(r) => r[0], (r) => r[1], (r) => camel(r[0])]) {
      const found = list.filter((r) => form(r) === name);
      if (found.length === 1) return found[0][0];
      if (found.length > 1) return null;
    }
    return null;
  }
  function importModule(spec, names, own) {
    const list = JSON.parse(host.servers());
    const servers = list.map((r) => r[0]);
    const where = `import ... from ${JSON.stringify(spec)}`;
    const segments = String(spec).split('/').filter((x) => x !== '' && x !== '.' && x !== '..');
    if (segments.length) {
      let last = segments[segments.length - 1].replace(/\.d\.ts$|\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/, '');
      if (last === 'index' && segments.length > 1) segments.pop();
      else segments[segments.length - 1] = last;
    }
    const last = segments[segments.length - 1];
    const before = segments[segments.length - 2];
    let module = null;
    let server = null;
    if (last !== undefined && WRAPPER_ROOTS.has(last)) module = toolsNow();
    else if (last !== undefined && (server = serverIn(list, last)) !== null) module = toolsNow()[server];
    else if (before !== undefined && (server = serverIn(list, before)) !== null) {
      const at = servers.indexOf(server);
      if (list[at][2] && host.tool(at, last) < 0) {
        throw new TypeError(`${where}: server "${server}" has no tool "${last}"; its tools: ${host.toolKeys(at).join(', ') || '(none)'}`);
      }
      module = toolsNow()[server];
    }
    if (module === null) {
      const mine = own.length ? `; this code's own exports (${own.join(', ')}) are imported by their names` : '';
      throw new TypeError(
        `${where}: no such module. Modules here are virtual (nothing is read from disk): "./mcp-wrappers" exports every server (${servers.join(', ') || 'none configured'}), ` +
        `"./mcp-wrappers/<server>" (or any relative path ending in a server's name, like "./lib/mcp/<server>") exports that server's tools${mine}`);
    }
    const out = createObject(null);
    for (const name of names) {
      if (name === 'default') { out.default = module; continue; }
      if (server === null) {
        const s = serverIn(list, name);
        if (s === null) throw new TypeError(`${where}: no server "${name}" to import; servers: ${servers.join(', ') || 'none configured'} (listServers() lists them)`);
        out[name] = module[s];
      } else {
        const at = servers.indexOf(server);
        if (list[at][2] && host.tool(at, name) < 0) {
          const keys = host.toolKeys(at);
          throw new TypeError(`${where}: server "${server}" has no tool "${name}"; its tools: ${keys.map((k) => (camel(k) !== k ? `${k} (${camel(k)})` : k)).join(', ') || '(none)'}`);
        }
        // A server whose tools are not known yet: the host resolves the name when it is
        // called (an unknown one is then its ToolError naming the nearest).
        out[name] = list[at][2] ? module[name] : toolFunction(server, name);
      }
    }
    return out;
  }

  // ------------------------------------------------------------ files: fs
  // Ordinary system calls of this (sandboxed) process: the sandbox's view decides what
  // exists and what is writable; a failure names the missing grant (permissions.read/write).
  function fsFail() {
    const info = JSON.parse(host.fsError() || '{"code":"EIO","message":"unknown error"}');
    const e = new Error(info.message);
    e.code = info.code;
    return e;
  }
  const pathArg = (p, fn) => {
    if (p instanceof URL) {
      if (p.protocol !== 'file:') throw new TypeError(`fs.${fn}: only file: URLs name files`);
      return decodeURIComponent(p.pathname);
    }
    if (typeof p !== 'string') throw new TypeError(`fs.${fn}: the path must be a string`);
    return p;
  };
  const encodingOf = (o) => (typeof o === 'string' ? o : o && o.encoding) || null;
  function latin1(u8) {
    let out = '';
    for (let i = 0; i < u8.length; i += 8192) out += String.fromCharCode.apply(null, u8.subarray(i, i + 8192));
    return out;
  }
  function bytesOf(v, what) {
    if (v instanceof Uint8Array) return v;
    if (v instanceof ArrayBuffer) return new Uint8Array(v);
    if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    throw new TypeError(`${what}: expected a string, ArrayBuffer or typed array`);
  }
  function makeStat(json) {
    const st = JSON.parse(json);
    return {
      size: st.size, mode: st.mode, mtimeMs: st.mtimeMs, mtime: new Date(st.mtimeMs),
      isFile: () => st.isFile, isDirectory: () => st.isDirectory, isSymbolicLink: () => st.isSymbolicLink,
    };
  }
  // The calls are synchronous underneath (the worker's own system calls); the Node-style
  // promise API wraps them, and the *Sync forms are there too.
  const fsSync = {
    readFileSync(path, options) {
      const enc = encodingOf(options);
      if (enc && !/^utf-?8$/i.test(enc)) throw new RangeError(`fs.readFile: only utf8 is supported, not "${enc}"`);
      const v = host.fsRead(pathArg(path, 'readFile'), !!enc);
      if (v === null) throw fsFail();
      return enc ? v : new Uint8Array(v);
    },
    readdirSync(path) {
      const v = host.fsReaddir(pathArg(path, 'readdir'));
      if (v === null || v === undefined) throw fsFail();
      return JSON.parse(v);
    },
    statSync(path) {
      const v = host.fsStat(pathArg(path, 'stat'), true);
      if (v === null || v === undefined) throw fsFail();
      return makeStat(v);
    },
    lstatSync(path) {
      const v = host.fsStat(pathArg(path, 'lstat'), false);
      if (v === null || v === undefined) throw fsFail();
      return makeStat(v);
    },
    existsSync(path) {
      const v = host.fsStat(pathArg(path, 'exists'), true);
      if (v === null || v === undefined) { host.fsError(); return false; }
      return true;
    },
    writeFileSync(path, data, options) {
      const p = pathArg(path, 'writeFile');
      const append = !!(options && typeof options === 'object' && options.flag === 'a');
      const ok = typeof data === 'string'
        ? host.fsWrite(p, data, false, append)
        : host.fsWrite(p, latin1(bytesOf(data, 'fs.writeFile')), true, append);
      if (!ok) throw fsFail();
    },
    appendFileSync(path, data) { fsSync.writeFileSync(path, data, { flag: 'a' }); },
    mkdirSync(path, options) {
      if (!host.fsMkdir(pathArg(path, 'mkdir'), !!(options && options.recursive))) throw fsFail();
    },
  };
  const promised = (f) => async (...a) => f(...a);
  const fsPromises = Object.freeze({
    readFile: promised(fsSync.readFileSync), readdir: promised(fsSync.readdirSync),
    stat: promised(fsSync.statSync), lstat: promised(fsSync.lstatSync),
    writeFile: promised(fsSync.writeFileSync), appendFile: promised(fsSync.appendFileSync),
    mkdir: promised(fsSync.mkdirSync),
  });
  const fs = Object.freeze({
    ...fsPromises, ...fsSync, promises: fsPromises,
    get workspace() { return host.workspace() ?? null; },
  });

  // ---------------------------------------------------------- network: fetch
  // The sandbox has no network: the host makes the request, if this execution was granted
  // the destination (permissions.net), and answers with the whole body (capped by the host).
  const METHOD_RE = /^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)$/i;
  class Headers {
    #list = [];
    constructor(init) {
      if (init instanceof Headers) this.#list = init.#list.map((p) => [p[0], p[1]]);
      else if (Array.isArray(init)) for (const p of init) this.append(p[0], p[1]);
      else if (init && typeof init === 'object') for (const k of Object.keys(init)) this.append(k, init[k]);
    }
    append(name, value) { this.#list.push([String(name).toLowerCase(), String(value)]); }
    set(name, value) { this.delete(name); this.append(name, value); }
    get(name) {
      const n = String(name).toLowerCase();
      const vs = this.#list.filter((p) => p[0] === n).map((p) => p[1]);
      return vs.length ? vs.join(', ') : null;
    }
    has(name) { const n = String(name).toLowerCase(); return this.#list.some((p) => p[0] === n); }
    delete(name) { const n = String(name).toLowerCase(); this.#list = this.#list.filter((p) => p[0] !== n); }
    forEach(fn, thisArg) { for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this); }
    *entries() {
      const names = [...new Set(this.#list.map((p) => p[0]))].sort();
      for (const n of names) yield [n, this.get(n)];
    }
    *keys() { for (const [k] of this.entries()) yield k; }
    *values() { for (const [, v] of this.entries()) yield v; }
    [Symbol.iterator]() { return this.entries(); }
    _pairs() { return this.#list.map((p) => [p[0], p[1]]); }
  }
  // A body: text kept as a string, bytes as a Uint8Array, or the host's base64.
  function bodyInit(body, headers) {
    if (body === undefined || body === null) return null;
    if (typeof body === 'string') {
      if (!headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
      return { text: body };
    }
    if (body instanceof URLSearchParams) {
      if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
      return { text: body.toString() };
    }
    return { bytes: bytesOf(body, 'body') };
  }
  class Body {
    #body;
    #used = false;
    _setBody(b) { this.#body = b; }
    _peek() { return this.#body; }
    get bodyUsed() { return this.#used; }
    #take() {
      if (this.#used) throw new TypeError('the body has already been read');
      this.#used = true;
      return this.#body;
    }
    async text() {
      const b = this.#take();
      if (!b) return '';
      if (b.text !== undefined) return b.text;
      if (b.b64 !== undefined) return host.b64text(b.b64);
      return new TextDecoder().decode(b.bytes);
    }
    async json() { return JSON.parse(await this.text()); }
    async arrayBuffer() {
      const b = this.#take();
      if (!b) return new ArrayBuffer(0);
      if (b.b64 !== undefined) return host.b64decode(b.b64);
      const u = b.bytes || new TextEncoder().encode(b.text);
      return u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength);
    }
    async bytes() { return new Uint8Array(await this.arrayBuffer()); }
    // One chunk: the host delivers the body whole (capped), read here as a stream.
    get body() {
      if (!this.#body) return null;
      const self = this;
      let done = false;
      const read = async () => {
        if (done) return { done: true, value: undefined };
        done = true;
        return { done: false, value: await self.bytes() };
      };
      return {
        getReader: () => ({ read, releaseLock() {}, cancel: async () => { done = true; } }),
        [Symbol.asyncIterator]: () => ({ next: read }),
      };
    }
  }
  class Request extends Body {
    constructor(input, init = {}) {
      super();
      const from = input instanceof Request ? input : null;
      this.url = from ? from.url : new URL(String(input)).href;
      const method = String(init.method ?? (from ? from.method : 'GET'));
      if (!METHOD_RE.test(method)) throw new TypeError(`fetch: method "${method}" is not supported`);
      this.method = method.toUpperCase();
      this.headers = new Headers(init.headers ?? (from ? from.headers : undefined));
      this.redirect = init.redirect ?? (from ? from.redirect : 'follow');
      this.signal = init.signal ?? null;
      this._setBody(init.body !== undefined ? bodyInit(init.body, this.headers) : from ? from._peek() : null);
    }
    clone() { return new Request(this); }
  }
  class Response extends Body {
    constructor(body = null, init = {}) {
      super();
      this.status = init.status ?? 200;
      this.statusText = init.statusText ?? '';
      this.headers = new Headers(init.headers);
      this.url = init._url ?? '';
      this.redirected = !!init._redirected;
      this.type = 'basic';
      this._setBody(init._b64 !== undefined ? { b64: init._b64 } : bodyInit(body, this.headers));
    }
    get ok() { return this.status >= 200 && this.status < 300; }
    clone() {
      const r = new Response(null, { status: this.status, statusText: this.statusText, headers: this.headers });
      r._setBody(this._peek());
      r.url = this.url;
      r.redirected = this.redirected;
      return r;
    }
    static json(data, init = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      return new Response(JSON.stringify(data), { ...init, headers });
    }
  }
  // RequestInit's standard members (the ones with no meaning here are accepted and have no
  // effect); any other name (`header`, `json`, `timeout`) is a TypeError, as in Python.
  const REQUEST_INIT = ['method', 'headers', 'body', 'redirect', 'signal', 'mode', 'credentials', 'cache',
    'referrer', 'referrerPolicy', 'integrity', 'keepalive', 'window', 'priority', 'duplex'];
  async function fetch(input, init = {}) {
    checkOptions('fetch', init, REQUEST_INIT, 'init');
    const req = new Request(input, init ?? {});
    if (req.signal && req.signal.aborted) throw new DOMException('the request was aborted', 'AbortError');
    const b = req._peek();
    let body;
    if (b && b.text !== undefined) body = host.b64encode(latin1(new TextEncoder().encode(b.text)));
    else if (b && b.bytes) body = host.b64encode(latin1(b.bytes));
    if (body !== undefined && (req.method === 'GET' || req.method === 'HEAD')) {
      throw new TypeError(`fetch: a ${req.method} request cannot have a body`);
    }
    const r = await hostCall({
      op: 'fetch', url: req.url, method: req.method, headers: req.headers._pairs(),
      ...(body !== undefined ? { body } : {}), redirect: req.redirect,
    });
    return new Response(null, {
      status: r.status, statusText: r.status_text, headers: r.headers,
      _url: r.url, _redirected: r.redirected, _b64: r.body,
    });
  }

  // -------------------------------------------------------------- globals
  const globals = {
    console, setTimeout: (fn, ms, ...a) => addTimer(fn, ms, a, false), clearTimeout: clearTimer,
    setInterval: (fn, ms, ...a) => addTimer(fn, ms, a, true), clearInterval: clearTimer,
    TextEncoder, TextDecoder, URL, URLSearchParams, atob, btoa, crypto, DOMException,
    fetch, Headers, Request, Response, fs,
    ...ourErrors, callMCPTool, listServers, searchTools, getToolSchema, discoverMCPTools, store, load,
    progress, llm, saveSkill, listSkills, skills,
  };
  if (typeof g.structuredClone !== 'function') globals.structuredClone = structuredClone;
  if (typeof g.queueMicrotask !== 'function') globals.queueMicrotask = (fn) => { Promise.resolve().then(fn); };
  if (typeof g.performance !== 'object') globals.performance = { now: () => host.now(), timeOrigin: Date.now() };
  for (const [k, v] of Object.entries(globals)) define(g, k, v);
  // What the host's rewrite of `import` statements calls (js_worker::modules::MODULE_FN).
  define(g, '__codeExecutorModule', importModule);

  function describe(e) {
    if (e instanceof Error) {
      const stack = e.stack ? String(e.stack).trimEnd() : undefined;
      return { name: String(e.name || 'Error'), message: String(e.message), stack };
    }
    return { name: 'Error', message: `Uncaught ${inspect(e)}` };
  }

  // Runs the user's async function; always resolves to a JSON RunOutcome, or to `[string]`
  // for a string result, which the engine encodes.
  async function run(fn, args) {
    // `tools` is made on first use; code that never touches it does not pay for it.
    runTools = null;
    Object.defineProperty(g, 'tools', {
      get: toolsNow,
      set: (value) => define(g, 'tools', value),
      configurable: true,
      enumerable: false,
    });
    try {
      const value = await fn(args);
      // A string is encoded by the engine (natively, with no replacer called for it): a
      // one-element array says so.
      if (typeof value === 'string') return [value];
      let result = value === undefined ? 'null' : jsonSafe(value);
      if (result === undefined) result = 'null';
      return `{"status":"ok","result":${result}}`;
    } catch (e) {
      // QuickJS throws `null` when it runs out of memory even for its own error; the engine
      // reports a rejected `null` as a MemoryError.
      if (e === null) throw e;
      return JSON.stringify({ status: 'err', error: describe(e) });
    }
  }

  return { run, deliver, deliverValue, fireTimer, seed: reseedRandom };
})
