# The Python side of the worker: speaks the worker protocol (crates/worker-protocol) over the
# process's inherited pipes and runs the user's code with the in-sandbox API.
#
# Embedded in the host binary and started as
# `python -I -S -B -c BOOTSTRAP COMPILED_SHIM SHIM [SITE_DIR...]` (runtime/python.rs), already
# confined by the sandbox. Nothing here is a security boundary: the host checks every
# request it receives, and the operating system confines the process.
#
# Frames: 4-byte big-endian length + UTF-8 JSON. The worker sends `ready` once warm, then for
# each `run` it sends `call`, `log`, `logs_truncated` and finally `done`; the host answers each
# `call` with a `reply` carrying the same id. A thread waiting for a reply reads the input pipe
# itself and hands other replies to whoever waits for them (a blocked thread or an asyncio
# future, for which a background thread reads), so calls made with `asyncio.gather` really are
# in flight together on the host.

import os
import sys

# glibc read its allocator settings (`GLIBC_TUNABLES`, from the host: see `python_env` in
# runtime/python.rs) when the interpreter started; code sees the environment without them.
os.environ.pop("GLIBC_TUNABLES", None)
# Modules to import before `ready` (from the host, for a worker started ahead while its pool's
# recent code used them; see `WARM_ENV` in runtime/python.rs).
_WARM = os.environ.pop("CODE_EXECUTOR_WARM", "")

# 1. The protocol owns the original stdin/stdout. Keep private copies (os.dup makes them
#    non-inheritable, so no child process gets them), then point fd 0 at /dev/null and fd 1 at
#    stderr: a stray write from C code, a subprocess or os.write(1, ...) can never corrupt a
#    frame; it lands in the host's debug log instead.
_IN = os.dup(0)
_OUT = os.dup(1)
_null = os.open("/dev/null", os.O_RDWR)
os.dup2(_null, 0)
os.dup2(2, 1)
os.close(_null)

# Only what the protocol and a trivial run need is imported before `ready`: C modules built
# into the interpreter, and modules CPython's own start has loaded already (io, codecs,
# _collections_abc). Everything else the shim uses (json, threading, ast, traceback, logging,
# asyncio, ...) is imported where it is used, and a worker left idle in the pool imports it
# ahead of time, a module at a time, between looks at its input (`_prefetch`): a warm worker
# has everything loaded as before, and a worker taken at once (bursts, back to back) starts
# without it. See docs/performance.md.
import _ast  # noqa: E402
import _collections_abc  # noqa: E402
import _json  # noqa: E402
import _thread  # noqa: E402
import binascii  # noqa: E402
import builtins  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import select  # noqa: E402
import warnings  # noqa: E402
from _collections import deque as _deque  # noqa: E402

try:
    import resource
except ImportError:  # pragma: no cover - every Linux CPython has it
    resource = None

PROTOCOL_VERSION = 3
SOURCE_NAME = "code.py"
SHIM_NAME = "<shim>"
# The host refuses worker frames above 16 MiB (worker_protocol::MAX_WORKER_FRAME_BYTES); a
# result that would exceed it becomes an error that says so instead.
MAX_FRAME_BYTES = 16 * 1024 * 1024 - 1024
# An unterminated line is sent once it reaches this size, so a writer that never prints a
# newline cannot grow the buffer without bound.
MAX_PARTIAL_LINE = 64 * 1024
# Characters of an error's message, and of its stack, a failed run reports.
_MAX_ERROR_TEXT = 1024 * 1024
# The JSON of a frame whose text follows it is at most this long (`worker_protocol`).
_TEXT_HEAD_BYTES = 128
# Nesting depth beyond which a result is shown as its repr.
MAX_RESULT_DEPTH = 100
# Levels of lists and dicts a value passed to the host may have (a tool call's arguments,
# their own dict the first; a stored value; a request's values): deeper is the code's
# ValueError at the call (`_Strict`). The host's decoder takes no deeper frame
# (worker_protocol::MAX_VALUE_DEPTH).
MAX_VALUE_DEPTH = 100
_RESULT = "__code_executor_result__"

_site_dirs = sys.argv[1:]
sys.argv = [SOURCE_NAME]

# ------------------------------------------------------------------------------- frames
_send_lock = _thread.allocate_lock()


class _ScanContext:
    """What the C scanner reads of a `json.JSONDecoder` (its defaults), without importing the
    json package (and re, which it needs) before the worker is ready."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


# One encoder and decoder for every frame, made once, straight from the C accelerator (what
# json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")) and
# json.JSONDecoder() use). Frames hold only values `_jsonable` made (no cycles, nesting
# bounded), so the encoder runs without cycle markers, and the host's frames are compact JSON
# objects, which the scanner reads from offset 0.
try:
    _c_encode = _json.make_encoder(
        None, None, _json.encode_basestring, None, ":", ",", False, False, False
    )
    _scan_once = _json.make_scanner(_ScanContext())

    def _to_json(frame):
        return "".join(_c_encode(frame, 0))

except (AttributeError, TypeError):  # pragma: no cover - an interpreter without the accelerator
    import json as _json_module

    _to_json = _json_module.JSONEncoder(
        ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode
    _scan_once = _json_module.JSONDecoder().scan_once


def _encode(frame):
    # Lone surrogates cannot be UTF-8: replace them rather than break the frame.
    return _to_json(frame).encode("utf-8", "replace")


def _decode(body):
    return _scan_once(body, 0)[0]


def _send_bytes(*body):
    """Writes one frame whose body is the concatenation of `body`."""
    size = sum(map(len, body))
    head = size.to_bytes(4, "big")
    # A large body is written after its length, part by part, not copied behind it.
    parts = (b"".join((head, *body)),) if size < 65536 else (head, *body)
    with _send_lock:
        for data in parts:
            n = os.write(_OUT, data)
            if n < len(data):
                data = memoryview(data)[n:]
                while data:
                    data = data[os.write(_OUT, data) :]


def _send(frame):
    _send_bytes(_encode(frame))


_inbuf = bytearray()  # read from the host and not yet taken as frames
_chunk = bytearray(65536)  # one read's buffer, reused: reading allocates nothing
_chunk_view = memoryview(_chunk)


def _read_frame():
    """Reads one frame from the host. Only the thread holding `_rlock` calls this. A frame the
    run's memory limit cannot hold is skipped, and its reader gets a MemoryError naming the
    limit (`_too_large`) instead of the frame."""
    global _inbuf
    while True:
        have = len(_inbuf)
        if have >= 4:
            length = int.from_bytes(_inbuf[:4], "big")
            end = 4 + length
            # Past the run's whole memory limit, a frame cannot be held whatever else the
            # code holds: not even read.
            if _State.running and 0 < _State.memory_bytes < length:
                return _skip_frame(end, False)
            if have >= end:
                head = bytes(_inbuf[4 : min(end, 4 + _FRAME_HEAD_BYTES)])
                taken = False
                try:
                    # A reply carrying a tool's text: its JSON, a newline, the text as it is.
                    newline = _inbuf.find(b"\n", 4, min(end, 4 + _TEXT_HEAD_BYTES))
                    text = None
                    with memoryview(_inbuf) as view:
                        if newline < 0:
                            body = str(view[4:end], "utf-8")  # decoded in place, not copied
                        else:
                            body = str(view[4:newline], "utf-8")
                            text = str(view[newline + 1 : end], "utf-8")
                    del _inbuf[:end]
                    taken = True
                    frame = _decode(body)
                except MemoryError:
                    body = text = None
                    if not taken:
                        del _inbuf[:end]
                    return _too_large(head, length, True)
                if text is not None:
                    outcome = frame.get("outcome") if frame.get("type") == "reply" else None
                    if not isinstance(outcome, dict) or outcome.pop("text", None) is not True:
                        raise ValueError("text after a frame that is not a reply with text")
                    outcome["value"] = text
                return frame
            if end - have > len(_chunk):
                # A large frame: read the rest of it straight into place, in a buffer made
                # at its size (growing this one would zero a temporary and copy it in).
                try:
                    grown = bytearray(end)
                except MemoryError:
                    return _skip_frame(end, True)
                grown[:have] = _inbuf
                _inbuf = grown
                with memoryview(_inbuf) as view:
                    while have < end:
                        n = os.readv(_IN, (view[have:end],))
                        if not n:
                            raise EOFError
                        have += n
                continue
        n = os.readv(_IN, (_chunk,))
        if not n:
            raise EOFError
        _inbuf.extend(_chunk_view[:n])


# The worker's exit code when memory ran out where no code could be told (`_await_frames`).
_EXIT_OUT_OF_MEMORY = 71

# The start of a frame's JSON read to tell what a skipped frame was: its type and id come first.
_FRAME_HEAD_BYTES = 256


def _skip_frame(end, ran_out):
    """Reads and drops the frame that ends at `end` in the stream (its first bytes are in
    `_inbuf`), keeping only its head; returns what `_too_large` makes of it."""
    global _inbuf
    want = min(end, 4 + _FRAME_HEAD_BYTES)
    while len(_inbuf) < want:
        n = os.readv(_IN, (_chunk,))
        if not n:
            raise EOFError
        _inbuf.extend(_chunk_view[:n])
    head = bytes(_inbuf[4:want])
    if len(_inbuf) >= end:
        del _inbuf[:end]
    else:
        left = end - len(_inbuf)
        _inbuf = bytearray()
        while left:
            n = os.readv(_IN, (_chunk_view[: min(left, len(_chunk))],))
            if not n:
                raise EOFError
            left -= n
    return _too_large(head, end - 4, ran_out)


def _too_large(head, length, ran_out):
    """The frame that stands for a host frame of `length` bytes the run's memory cannot hold
    (`head`: the start of its JSON): a reply whose outcome raises MemoryError in the call it
    answers, naming the limit; a run whose code raises it."""
    import re

    text = head.decode("latin-1")
    kind = re.search(r'"type":"([a-z_]+)"', text)
    kind = kind.group(1) if kind else ""
    found = re.search(r'"id":(\d+)', text)
    call_id = int(found.group(1)) if found else None
    what = _call_names.get(call_id, "the call") if kind in ("reply", "kept") else "the run's code"
    limit = _State.memory_bytes / 2**20
    if ran_out:
        why = "too large for this run's memory limit of %g MiB (reading it ran out of memory)" % limit
    else:
        why = "over this run's memory limit of %g MiB" % limit
    size = "%.1f MiB" % (length / 2**20)
    if size == "%.1f MiB" % limit:
        size = "%d bytes" % length  # as close to the limit as that: the exact size says more
    message = (
        "the %s of %s is %s, %s: ask for less (filter, page or narrow the request), "
        "or raise limits.memoryMb" % ("reply" if kind != "run" else "frame", what, size, why)
    )
    if kind == "run":
        return {"type": "run", "code": "", "too_large": message}
    if call_id is None:
        raise MemoryError(message)
    return {"type": "reply", "id": call_id, "outcome": {"status": "err", "raise": MemoryError(message)}}


# Call id -> what the call asked (`tools.server.tool`, `fetch`...), for a reply's error.
_call_names = {}

# Run frames not yet taken by the main thread (appending and popping are atomic).
_runs = _deque()
# Call id -> waiter. Setting and popping one key are atomic (the GIL; per-object locks on
# free-threaded builds), so no lock guards it.
_pending = {}
_ids = itertools.count(1)

# Whoever waits for a frame reads it: a thread blocked in call_mcp_tool reads its own reply
# from the pipe, with no reader thread and hand-off in between. One thread at a time holds
# `_rlock` and reads, delivering every frame to its waiter; the others wait on their event.
# A reader that leaves, and a waiter that leaves while nobody reads, nudge one remaining
# waiter to take over. A background thread reads while asyncio calls are in flight.
_rlock = _thread.allocate_lock()
_waiting = set()
_waiting_lock = _thread.allocate_lock()
# The background reader and its condition, made by the first asyncio call (`_async_cond`).
_async = None
_async_init = _thread.allocate_lock()
_async_pending = [0]


def _dispatch(frame):
    kind = frame.get("type")
    if kind == "run":
        _runs.append(frame)
        _run_waiter.wake()
    elif kind == "reply":
        _call_names.pop(frame.get("id"), None)
        outcome = frame.get("outcome") or {}
        if frame.get("kept"):
            _State.kept = (frame.get("id"), outcome.get("value"))
        waiter = _pending.pop(frame.get("id"), None)
        if waiter is not None:
            waiter.deliver(outcome)
    elif kind == "kept":
        _call_names.pop(frame.get("id"), None)
        # A tail call's large text, kept on the host and not sent (`_tail`).
        kept = _Kept()
        _State.kept = (frame.get("id"), kept)
        waiter = _pending.pop(frame.get("id"), None)
        if waiter is not None:
            waiter.deliver({"status": "ok", "value": kept})


def _nudge():
    """Wakes one waiting thread to take over reading, when nobody reads."""
    if not _waiting or _rlock.locked():
        return
    with _waiting_lock:
        other = next(iter(_waiting), None)
    if other is not None:
        other.wake()


def _await_frames(done, waiter):
    """Blocks until `done()`, reading and delivering frames itself when no other thread does.
    A lone caller takes the read lock at once; only a thread that must wait for another
    reader gets an event and joins `_waiting`."""
    try:
        while not done():
            if _rlock.acquire(blocking=False):
                try:
                    while not done():
                        _dispatch(_read_frame())
                except MemoryError as e:
                    # Out of memory outside any frame `_read_frame` could skip: not the end
                    # the host asked for, so not exit code 0; the host reports stderr's line.
                    try:
                        os.write(2, b"code-executor-mcp python worker: out of memory reading "
                                 b"the host's frames: " + str(e).encode("utf-8", "replace") + b"\n")
                    finally:
                        os._exit(_EXIT_OUT_OF_MEMORY)
                except BaseException:  # noqa: BLE001 - EOF or a broken frame: the host is gone
                    # The host closed our input: it no longer wants anything from this worker.
                    os._exit(0)
                finally:
                    _rlock.release()
                break
            if waiter.event is None:
                import threading

                waiter.event = threading.Event()
            with _waiting_lock:
                _waiting.add(waiter)
            try:
                # The reader may have left before this waiter was there to be nudged.
                if _rlock.locked() and not done():
                    waiter.event.wait()
                waiter.event.clear()
            finally:
                with _waiting_lock:
                    _waiting.discard(waiter)
    finally:
        _nudge()


def _async_cond():
    """The condition asyncio calls count themselves under, with the background reader started
    on first use (runs that make no asyncio call start no thread)."""
    global _async, _async_thread
    if _async is None:
        with _async_init:
            if _async is None:
                import threading

                cond = threading.Condition()
                _async_thread = threading.Thread(
                    target=_background_reader, args=(cond,), name="protocol-reader", daemon=True
                )
                _async_thread.start()
                _async = cond
    return _async


# Set to stop the background reader at the end of a run (`_stop_async_reader`).
_async_stop = [False]
_async_thread = None


def _background_reader(_async):
    """Reads for asyncio calls, whose event loop cannot block on the pipe."""
    waiter = _Waiter()
    while True:
        with _async:
            while not _async_pending[0] and not _async_stop[0]:
                _async.wait()
            if _async_stop[0] and not _async_pending[0]:
                return
        _await_frames(lambda: not _async_pending[0], waiter)


def _stop_async_reader():
    """Ends the background reader with the run that started it: a session's worker between
    runs has no thread but its main one, which the host checks (a thread left running by the
    code stops the worker). A run that left asyncio calls unanswered keeps it: the host
    stops that worker anyway."""
    global _async
    cond = _async
    if cond is None:
        return
    with cond:
        if _async_pending[0]:
            return
        _async_stop[0] = True
        cond.notify_all()
    _async_thread.join(1.0)
    with _async_init:
        _async = None
        _async_stop[0] = False


# ------------------------------------------------------------------------ output capture
class _State:
    budget = 0
    truncated = False
    memory_bytes = 0
    # A run is executing: frames past its memory limit are skipped (`_read_frame`).
    running = False
    idle_vm = None
    # The namespace a session's runs share (what the code defined stays for the next run).
    session_ns = None
    # What the run was granted (files, network), for error messages.
    access = {}
    urllib_installed = False
    last_open = None
    # The code of the current (or last) run, for linecache.
    source = None
    # Runs served so far.
    runs = 0
    # The latest reply the host kept (its id and string): a run whose result is that very
    # string sends a reference to it instead of the text (`RunOutcome::Reply`).
    kept = None
    # The run's seed from the host (its call log keeps it, so a replay draws the same):
    # `random` is seeded with it, now if it is loaded, else when code imports it.
    seed = None


def _clean(text):
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def _log(level, text):
    """Sends one captured line, or drops it once the run's output budget is spent."""
    if _State.truncated:
        return
    text = _clean(str(text))
    size = len(text.encode("utf-8"))
    if size > _State.budget:
        _State.truncated = True
        _send({"type": "logs_truncated"})
        return
    _State.budget -= size
    _send({"type": "log", "level": level, "text": text})


class _Capture(io.TextIOBase):
    """sys.stdout / sys.stderr: one log entry per line."""

    def __init__(self, level, name):
        super().__init__()
        self._level = level
        self._name = name
        self._buf = ""
        self._lock = _thread.allocate_lock()

    @property
    def encoding(self):
        return "utf-8"

    @property
    def name(self):
        return self._name

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        with self._lock:
            self._buf += s
            if "\n" in self._buf:
                *lines, self._buf = self._buf.split("\n")
                for line in lines:
                    _log(self._level, line)
            if len(self._buf) >= MAX_PARTIAL_LINE:
                line, self._buf = self._buf, ""
                _log(self._level, line)
        return len(s)

    def finish(self):
        with self._lock:
            if self._buf:
                line, self._buf = self._buf, ""
                _log(self._level, line)


_stdout = _Capture("log", "<stdout>")
_stderr = _Capture("error", "<stderr>")
sys.stdout = sys.__stdout__ = _stdout
sys.stderr = sys.__stderr__ = _stderr


def _install_logging(logging):
    """logging: every record is captured with its level (root logger at DEBUG). Installed as
    soon as the logging module is loaded (by the code, by asyncio or ahead of time)."""

    class _LogHandler(logging.Handler):
        def emit(self, record):
            try:
                text = self.format(record)
            except Exception:  # noqa: BLE001
                text = str(record.msg)
            if record.name != "root":
                text = "%s: %s" % (record.name, text)
            if record.levelno >= logging.ERROR:
                level = "error"
            elif record.levelno >= logging.WARNING:
                level = "warn"
            elif record.levelno >= logging.INFO:
                level = "info"
            else:
                level = "debug"
            _log(level, text)

    root = logging.getLogger()
    root.handlers[:] = [_LogHandler()]
    root.setLevel(logging.DEBUG)
    # asyncio logs its selector choice at DEBUG on every new loop: noise, not the user's output.
    logging.getLogger("asyncio").setLevel(logging.WARNING)


def _showwarning(message, category, filename, lineno, file=None, line=None):
    _log("warn", "%s: %s (%s:%s)" % (category.__name__, message, filename, lineno))


warnings.showwarning = _showwarning

# ------------------------------------------------------------------------ JSON results


def _json_key(k):
    if isinstance(k, str):
        return _clean(k)
    if k is None or isinstance(k, (bool, int, float)):
        import json

        return json.dumps(k)
    return str(k)


class _Strict(set):
    """The path `_jsonable` keeps of a value passed to the host (`what` names it): a cycle, or
    nesting past MAX_VALUE_DEPTH, is a ValueError saying so, not a value shown as text."""

    __slots__ = ("what",)

    def __init__(self, what, *ids):
        super().__init__(ids)
        self.what = what

    def refuse(self, depth):
        if depth is None:
            return ValueError(
                "%s: a cycle (a list or dict that holds itself), which JSON cannot hold: pass "
                "a copy without the cycle" % self.what
            )
        return ValueError(
            "%s: nested more than %d levels of lists and dicts, the most a value passed to the "
            "host may have: flatten it, or pass the deep part as a JSON string (json.dumps)"
            % (self.what, MAX_VALUE_DEPTH)
        )


def _jsonable(v, depth=0, path=None):
    """Converts a Python value to JSON. See docs/python.md for how each kind is shown. With
    a `_Strict` path, a cycle or a value too deep raises instead (values passed to the host)."""
    if v is None or v is True or v is False:
        return v
    # The plain types first; their subclasses (enums among them) take the longer way below.
    t = type(v)
    if t is str:
        return _clean(v)
    if t is int:
        return v if -(2**63) <= v < 2**64 else str(v)
    if t is float:
        return v if math.isfinite(v) else repr(v)
    if t is not dict and t is not list:
        if t is _Pending:  # a call passed on unawaited: its value
            return _jsonable(v._value(), depth, path)
        # A value of an enum's type means the module is loaded: look it up, do not import it.
        enum = sys.modules.get("enum")
        if enum is not None and isinstance(v, enum.Enum):
            return _jsonable(v.value, depth, path)
        if isinstance(v, bool):
            return bool(v)
        if isinstance(v, int):
            v = int(v)
            return v if -(2**63) <= v < 2**64 else str(v)
        if isinstance(v, float):
            return float(v) if math.isfinite(v) else repr(float(v))
        if isinstance(v, str):
            return _clean(str(v))
    if depth > MAX_RESULT_DEPTH:
        return _repr(v)
    if path is None:
        path = set()
    elif type(path) is _Strict and depth >= MAX_VALUE_DEPTH:
        raise path.refuse(depth)
    if id(v) in path:
        if type(path) is _Strict:
            raise path.refuse(None)
        return "[Circular]"
    path.add(id(v))
    try:
        return _container(v, depth + 1, path)
    finally:
        path.discard(id(v))


def _container(v, depth, path):
    if type(v) is dict or isinstance(v, _collections_abc.Mapping):
        # Plain string keys and values are taken as they are, without a call each.
        return {
            (k if type(k) is str and k.isascii() else _json_key(k)): (
                x if type(x) is str and x.isascii() else _jsonable(x, depth, path)
            )
            for k, x in v.items()
        }
    if isinstance(v, tuple) and hasattr(v, "_asdict"):
        return _jsonable(v._asdict(), depth, path)
    if isinstance(v, (list, tuple, _deque)):
        return [_jsonable(x, depth, path) for x in v]
    if isinstance(v, (set, frozenset)):
        try:
            items = sorted(v)
        except TypeError:
            items = list(v)
        return [_jsonable(x, depth, path) for x in items]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return _b64encode(v)
    # Modules the user's value could come from are looked up, not imported: a value of one of
    # their types means the module is loaded already, and workers start faster without them.
    datetime = sys.modules.get("datetime")
    if datetime is not None:
        if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
            return v.isoformat()
        if isinstance(v, datetime.timedelta):
            return v.total_seconds()
    if isinstance(v, complex) or type(v).__name__ in ("Decimal", "UUID") or _is_path(v):
        return str(v)
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is not None and dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _jsonable(getattr(v, f.name), depth, path) for f in dataclasses.fields(v)}
    if isinstance(v, BaseException):
        return {"name": type(v).__name__, "message": str(v)}
    if not isinstance(v, type):
        # pydantic models, numpy arrays and scalars, pandas objects.
        for method in ("model_dump", "tolist", "to_dict"):
            fn = getattr(v, method, None)
            if callable(fn):
                try:
                    return _jsonable(fn(), depth, path)
                except Exception:  # noqa: BLE001
                    break
    return _repr(v)


def _b64encode(data):
    """base64.b64encode(data) as str, without importing base64."""
    return binascii.b2a_base64(bytes(data), newline=False).decode("ascii")


def _is_path(v):
    pathlib = sys.modules.get("pathlib")
    return pathlib is not None and isinstance(v, pathlib.PurePath)


def _repr(v):
    try:
        return _clean(repr(v))
    except Exception:  # noqa: BLE001
        return "<%s object>" % type(v).__name__


# ---------------------------------------------------------------------- errors and calls
# The classes of failed requests, from the host's one table (worker_protocol::CallError),
# parents first: ours extend Exception or each other; the rest are Python's own.
_ERROR_TABLE = "__CALL_ERRORS__"


def _error_init(self, message=""):
    Exception.__init__(self, message)
    self.message = message


_ERRORS = {}
_OUR_ERRORS = {}
for _row in _decode(_ERROR_TABLE):
    if _row["py"]:
        _ERRORS[_row["name"]] = getattr(builtins, _row["py"])
    else:
        _parent = _ERRORS[_row["parent"]] if _row["parent"] else Exception
        _ERRORS[_row["name"]] = _OUR_ERRORS[_row["name"]] = type(
            _row["name"], (_parent,), {"__doc__": _row["doc"], "__init__": _error_init}
        )
ToolError = _ERRORS["ToolError"]
PolicyError = _ERRORS["PolicyError"]
LimitError = _ERRORS["LimitError"]
NetworkError = _ERRORS["NetworkError"]


def _make_error(info):
    name = str(info.get("name") or "ToolError")
    message = str(info.get("message") or "")
    cls = _ERRORS.get(name)
    if cls is None:
        cls = ToolError
        if name.isidentifier() and not _iskeyword(name):
            cls = _ERRORS[name] = type(name, (ToolError,), {})
    return cls(message)


def _result(outcome):
    if outcome.get("status") == "ok":
        return outcome.get("value")
    # A reply the run's memory could not hold (`_too_large`).
    exc = outcome.get("raise")
    if exc is not None:
        raise exc
    raise _make_error(outcome.get("error") or {})


class _Waiter:
    __slots__ = ("event", "outcome")

    def __init__(self):
        # Made only when this waiter has to wait for another thread's reading.
        self.event = None
        self.outcome = None

    def wake(self):
        event = self.event
        if event is not None:
            event.set()

    def deliver(self, outcome):
        self.outcome = outcome
        self.wake()


_run_waiter = _Waiter()


def _async_done():
    with _async:
        _async_pending[0] -= 1


class _FutureWaiter:
    __slots__ = ("loop", "future")

    def __init__(self, loop, future):
        self.loop = loop
        self.future = future

    def deliver(self, outcome):
        _async_done()
        try:
            self.loop.call_soon_threadsafe(_settle, self.future, outcome)
        except RuntimeError:  # the loop was closed: nobody waits any more
            pass


def _settle(future, outcome):
    if not future.done():
        future.set_result(outcome)


# A tool call's top-level string arguments at least this long go after the frame's JSON, as
# their UTF-8 (`WorkerFrame::decode`): no JSON escapes to write here or to read on the host.
_TEXT_ARG_CHARS = 65536


def _call_frame(request, tail=False):
    """(id, the parts of the encoded frame) of one request (`tail`: see `_tail`). A frame past
    the host's limit would be a broken protocol to the host: it is the code's error instead,
    raised where it called."""
    call_id = next(_ids)
    texts = None
    args = request.get("args") if request.get("op") == "tool" else None
    if type(args) is dict:
        big = [
            k
            for k, v in args.items()
            if type(v) is str and len(v) >= _TEXT_ARG_CHARS and k.isascii()
        ]
        if big:
            args = dict(args)
            # Lone surrogates cannot be UTF-8: replaced, as the frame's encoder replaces them.
            texts = [args[k].encode("utf-8", "replace") for k in big]
            for k in big:
                args[k] = None
            request = dict(request, args=args, texts=[[k, len(t)] for k, t in zip(big, texts)])
    frame = {"type": "call", "id": call_id, "request": request}
    op = request.get("op")
    if op == "tool":
        _call_names[call_id] = (
            "tools.%s.%s" % (request["server"], request.get("name"))
            if request.get("server") is not None
            else "call_mcp_tool(%r)" % (request.get("name"),)
        )
    else:
        _call_names[call_id] = str(op)
    if tail:
        frame["tail"] = True
    body = (_encode(frame),)
    if texts:
        body = (*body, b"\n", *texts)
    size = sum(map(len, body))
    if size > MAX_FRAME_BYTES:
        raise ValueError(
            "the tool call's arguments are %.1f MiB as JSON; a call carries at most 16 MiB: "
            "pass less per call (split the data over several calls)" % (size / 2**20)
        )
    return call_id, body


def _request(request, tail=False):
    """Sends one request and blocks until its reply (see `_await_frames` for who reads it)."""
    call_id, body = _call_frame(request, tail)
    waiter = _Waiter()
    _pending[call_id] = waiter
    _send_bytes(*body)
    _await_frames(lambda: waiter.outcome is not None, waiter)
    return _result(waiter.outcome)


async def _arequest(request, tail=False):
    import asyncio  # loaded already when an event loop awaits this

    call_id, body = _call_frame(request, tail)
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    cond = _async_cond()
    with cond:
        _async_pending[0] += 1
        cond.notify()
    waiter = _FutureWaiter(loop, future)
    _pending[call_id] = waiter
    try:
        _send_bytes(*body)
        return _result(await future)
    finally:
        # A call abandoned before its reply (cancelled) no longer keeps the reader busy.
        _call_names.pop(call_id, None)
        if _pending.pop(call_id, None) is not None:
            _async_done()


# ------------------------------------------------------------------ blocking or awaited
# Every function of the API that asks the host (call_mcp_tool, the discovery functions,
# llm.ask, ...) is one function with both forms: `x = call_mcp_tool(...)` blocks and gives the
# value, `await call_mcp_tool(...)` waits without blocking the event loop. Which one a call is
# is decided where it is made, from what the calling code does with its value (`_form`), so the
# value is a plain value wherever code can use it as one:
#
# - no event loop runs in this thread (plain code, a thread, a function called from either):
#   the call blocks and returns the value itself, as it always has;
# - in running async code (top-level `await`, `asyncio.run(main())`):
#   - awaited at once (`await f(...)`): a coroutine that waits for the reply without blocking
#     the loop, so calls awaited in several tasks are in flight together;
#   - kept as a value (assigned, returned, discarded, indexed, iterated, formatted, compared):
#     the call blocks and returns the value, made awaitable too when it is a dict, list or str
#     (`_AWAITABLE`), so `t = f(...); ...; await t` works as well;
#   - passed on without awaiting (an argument of `asyncio.gather`, `create_task`, `wait_for`,
#     an element of a list or comprehension): a `_Pending` call, sent at once, so calls
#     gathered together are in flight together; awaiting it (directly, in gather or as a task)
#     gives the value, and using it as a value instead waits for the reply and acts as it.
# docs/python.md ("Blocking or awaited") argues the design.
_PLAIN, _AWAITED, _VALUE, _PASSED = range(4)
# The opcodes `_form` reads (names differ across CPython versions), made on first use.
_OPS = None


def _opsets():
    import opcode

    opmap = opcode.opmap

    def ids(names):
        return frozenset(opmap[n] for n in names if n in opmap)

    skip = ids(("CACHE", "EXTENDED_ARG", "NOP"))
    awaited = ids(("GET_AWAITABLE",))
    # The value is used here, right after the call: bound, discarded, returned, taken apart.
    value = ids(
        [n for n in opmap if n.startswith(("STORE_", "POP_JUMP", "JUMP_IF_", "UNPACK_", "FORMAT_"))]
        + [
            "POP_TOP", "RETURN_VALUE", "LOAD_ATTR", "LOAD_METHOD", "GET_ITER", "GET_AITER",
            "CONVERT_VALUE", "TO_BOOL", "UNARY_NOT", "UNARY_NEGATIVE", "UNARY_INVERT", "COPY",
            "DUP_TOP", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE", "CONTAINS_OP",
            "IS_OP", "COMPARE_OP", "BINARY_OP", "BINARY_SUBSCR", "YIELD_VALUE",
        ]
    )
    # Operands loaded after the value before it is used (`d[k] = f()`, `f()['key']`, `f() + 1`).
    loads = ids(
        [n for n in opmap if n.startswith(("LOAD_FAST", "LOAD_CONST", "LOAD_SMALL"))]
        + ["LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_ATTR", "LOAD_CLASSDEREF"]
    )
    after_loads = ids(
        [n for n in opmap if n.startswith(("STORE_", "BINARY_"))]
        + ["COMPARE_OP", "CONTAINS_OP", "IS_OP"]
    )
    return skip, awaited, value, loads, after_loads


def _form():
    """How the code that called our API function uses its value (see above)."""
    events = sys.modules.get("asyncio.events")
    if events is None or events._get_running_loop() is None:
        return _PLAIN
    global _OPS
    if _OPS is None:
        _OPS = _opsets()
    skip, awaited, value, loads, after_loads = _OPS
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == SHIM_NAME:
        frame = frame.f_back
    if frame is None or frame.f_lasti < 0:
        return _VALUE
    code = frame.f_code.co_code
    i, end = frame.f_lasti + 2, len(code)
    while i < end and code[i] in skip:
        i += 2
    if i >= end:
        return _VALUE
    op = code[i]
    if op in awaited:
        return _AWAITED
    if op in value:
        return _VALUE
    loaded = False
    while i < end and (code[i] in loads or code[i] in skip):
        loaded = loaded or code[i] in loads
        i += 2
    if loaded and i < end and code[i] in after_loads:
        return _VALUE
    return _PASSED


def _call(request, post=None, tail=False):
    """Sends `request` in the form the calling code uses (`_form`); `post` makes the value
    code sees of the host's answer."""
    form = _form()
    if form == _PLAIN:
        value = _request(request, tail)
        if post is not None:
            value = post(value)
        _LAST_PLAIN[0] = id(value)
        return value
    if form == _AWAITED:
        return _awaited(request, post, tail)
    if form == _PASSED and not tail:
        return _Pending(request, post)
    value = _request(request, tail)
    if post is not None:
        value = post(value)
    # A tail call's value is the run's result as it is (`_tail`): nothing awaits it.
    return value if tail else _awaitable(value)


# The id of the value the latest call without a running event loop returned: what
# `asyncio.run(call_mcp_tool(...))` in plain code passes to asyncio.run (`_install_asyncio`).
_LAST_PLAIN = [None]


def _install_asyncio(asyncio):
    """asyncio.run(f(...)) of one of our calls made where no loop runs (plain code, as the
    documents' async examples are often cut down to): the call has run, blocking, so
    asyncio.run gives its value instead of refusing a value that is not a coroutine."""
    run = asyncio.run

    def run_(main, *args, **kwargs):
        if id(main) == _LAST_PLAIN[0] and not asyncio.iscoroutine(main):
            return main
        return run(main, *args, **kwargs)

    run_.__doc__, run_.__name__, run_.__qualname__, run_.__wrapped__ = run.__doc__, "run", "run", run
    asyncio.run = run_


async def _awaited(request, post, tail):
    value = await _arequest(request, tail)
    return value if post is None else post(value)


def _await_self(self):
    """`await value` gives the value itself."""
    return self
    yield  # noqa: unreachable - makes this a generator, as __await__ must return an iterator


# A value the code kept inside async code, awaitable too: `t = call_mcp_tool(...)` then
# `await t` or `asyncio.gather(t, ...)`. Subclasses of the value's own type, so isinstance,
# json.dumps, indexing, printing and comparing behave as for the plain value.
_AWAITABLE = {
    t: type("awaitable_" + t.__name__, (t,), {"__slots__": (), "__await__": _await_self})
    for t in (dict, list, str)
}


def _awaitable(value):
    cls = _AWAITABLE.get(type(value))
    return value if cls is None else cls(value)


class _Pending:
    """A call made in running async code and passed on without being awaited (to
    asyncio.gather, create_task, a list...): sent when made, so calls passed together are in
    flight together. Awaiting it (directly, in gather, as a task: it is a coroutine) gives the
    value without blocking the loop; using it as a value instead (indexing, len, iteration,
    str, print, ==, isinstance in the code, json.dumps, a method of the value) waits for the
    reply and acts as it.
    Never awaited nor used, it warns about nothing: its reply is dropped."""

    __slots__ = ("_lock", "outcome", "event", "_futures", "_post", "_done", "_it")

    def __init__(self, request, post):
        self._lock = _thread.allocate_lock()
        self.outcome = None
        self.event = None
        self._futures = []
        self._post = post
        self._done = None
        self._it = None
        call_id, body = _call_frame(request)
        _pending[call_id] = self
        _send_bytes(*body)

    # The reply, delivered by whichever thread reads (`_dispatch`).
    def wake(self):
        event = self.event
        if event is not None:
            event.set()

    def deliver(self, outcome):
        with self._lock:
            self.outcome = outcome
            futures, self._futures = self._futures, []
        self.wake()
        for loop, future in futures:
            _async_done()
            try:
                loop.call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:  # the loop was closed: nobody waits any more
                pass

    def _finish(self, outcome):
        if self._done is None:
            try:
                value = _result(outcome)
                self._done = (True, value if self._post is None else self._post(value))
            except BaseException as e:  # noqa: BLE001 - raised to whoever uses the value
                self._done = (False, e)
        ok, value = self._done
        if ok:
            return value
        raise value

    def _value(self):
        """The value, waiting for the reply (blocking this thread) when it has not come."""
        if self.outcome is None:
            _await_frames(lambda: self.outcome is not None, self)
        return self._finish(self.outcome)

    async def _wait(self):
        import asyncio

        entry = None
        with self._lock:
            outcome = self.outcome
            if outcome is None:
                loop = asyncio.get_running_loop()
                entry = (loop, loop.create_future())
                self._futures.append(entry)
                cond = _async_cond()
                with cond:
                    _async_pending[0] += 1
                    cond.notify()
        if entry is not None:
            try:
                outcome = await entry[1]
            finally:
                # Cancelled before the reply: it no longer keeps the reader busy.
                with self._lock:
                    if entry in self._futures:
                        self._futures.remove(entry)
                        _async_done()
        return self._finish(outcome)

    # Awaitable, and a coroutine to asyncio (create_task, gather, wait_for, ensure_future).
    def __await__(self):
        return self._wait().__await__()

    def send(self, value):
        if self._it is None:
            self._it = self.__await__()
        return self._it.send(value)

    def throw(self, *exc):
        if self._it is None:
            self._it = self.__await__()
        return self._it.throw(*exc)

    def close(self):
        if self._it is not None:
            self._it.close()

    # Used as a value: the value's own behaviour.
    @property
    def __class__(self):
        # `isinstance(x, dict)` in the code sees the value's class (waiting for the reply);
        # asyncio's own checks (is it a coroutine?) see the pending call and do not wait.
        if sys._getframe(1).f_code.co_filename == SOURCE_NAME:
            return type(self._value())
        return _Pending

    def __getattr__(self, name):
        # asyncio and inspect probe coroutines for these: a probe must not wait for the reply.
        if name.startswith("_") or name[:3] in ("cr_", "gi_", "ag_"):
            raise AttributeError(name)
        return getattr(self._value(), name)

    def __repr__(self):
        return repr(self._value())

    def __str__(self):
        return str(self._value())

    def __format__(self, spec):
        return format(self._value(), spec)

    def __bool__(self):
        return bool(self._value())

    def __len__(self):
        return len(self._value())

    def __iter__(self):
        return iter(self._value())

    def __reversed__(self):
        return reversed(self._value())

    def __contains__(self, item):
        return item in self._value()

    def __getitem__(self, key):
        return self._value()[key]

    def __setitem__(self, key, value):
        self._value()[key] = value

    def __delitem__(self, key):
        del self._value()[key]

    def __eq__(self, other):
        return self._value() == other

    def __ne__(self, other):
        return self._value() != other

    def __lt__(self, other):
        return self._value() < other

    def __le__(self, other):
        return self._value() <= other

    def __gt__(self, other):
        return self._value() > other

    def __ge__(self, other):
        return self._value() >= other

    # Hashed by identity, as coroutines are: asyncio.gather keys its arguments in a dict, which
    # must not wait for the reply (nor raise its error).
    __hash__ = object.__hash__

    def __add__(self, other):
        return self._value() + other

    def __radd__(self, other):
        return other + self._value()

    def __mul__(self, other):
        return self._value() * other

    def __rmul__(self, other):
        return other * self._value()

    def __mod__(self, other):
        return self._value() % other

    def __int__(self):
        return int(self._value())

    def __float__(self):
        return float(self._value())


# Its name in messages (`expected str instance, PendingCall found`), as docs/python.md calls it.
_Pending.__name__ = _Pending.__qualname__ = "PendingCall"
_collections_abc.Coroutine.register(_Pending)


def _unpend(value):
    """A pending call's value (`_Pending`), or `value`."""
    return value._value() if type(value) is _Pending else value


def _install_json(json):
    """json.dumps and json.loads take a pending call (`_Pending`) as its value."""
    default = json.JSONEncoder.default

    def default_(self, o):
        if type(o) is _Pending:
            return o._value()
        return default(self, o)

    loads = json.loads

    def loads_(s, *args, **kwargs):
        return loads(_unpend(s), *args, **kwargs)

    default_.__doc__, loads_.__doc__ = default.__doc__, loads.__doc__
    loads_.__name__ = loads_.__qualname__ = "loads"
    default_.__name__ = default_.__qualname__ = "default"
    default_.__wrapped__, loads_.__wrapped__ = default, loads  # inspect.signature as before
    json.JSONEncoder.default = default_
    json.loads = loads_


def _tool_request(fn, a, b, c, kwargs):
    if isinstance(b, str):
        server, name, args = a, b, c
    else:
        if c is not None:
            raise TypeError("%s: use (name, args) or (server, tool, args)" % fn)
        server, name, args = None, a, b
    if args is None:
        args = {}
    elif type(args) is not dict and not isinstance(args, _collections_abc.Mapping):
        raise TypeError("%s: arguments must be a dict, got %s" % (fn, _repr(args)))
    if kwargs:
        args = {**args, **kwargs}
    # call_mcp_tool answers in the documents' shape, the answer's text ("text": JSON parsed
    # when the text is the data, else the str); the typed proxies (_Tool) ask for the
    # structured shape instead.
    what = "%s(%r): the arguments" % (fn, str(name))
    request = {"op": "tool", "name": str(name), "args": _tool_args(args, what), "shape": "text"}
    if server is not None:
        request["server"] = str(server)
    return request


def _tool_args(args, what="the tool call's arguments"):
    """A call's arguments as `_jsonable` makes them, except that a plain dict's own string
    values are taken as they are: the frame's encoder replaces a lone surrogate exactly as
    `_clean` would, so checking a large text first (a UTF-8 encode of it) is a pass for
    nothing."""
    if type(args) is not dict:
        return _jsonable(args, 0, _Strict(what))
    path = _Strict(what, id(args))
    return {
        (k if type(k) is str and k.isascii() else _json_key(k)): (
            x if type(x) is str else _jsonable(x, 1, path)
        )
        for k, x in args.items()
    }


def call_mcp_tool(name, args=None, tool_args=None, /, **kwargs):
    """call_mcp_tool('mcp__server__tool', {...}) or call_mcp_tool('server', 'tool', {...});
    keyword arguments are added to the arguments. Blocks until the tool answers, or, awaited
    (`await call_mcp_tool(...)`), waits without blocking the event loop (`_call`). Returns the
    answer's text (a str; the parsed value when the text is JSON data), where
    tools.server.tool(...) returns the structured result."""
    return _call(_tool_request("call_mcp_tool", name, args, tool_args, kwargs))


async def acall_mcp_tool(name, args=None, tool_args=None, /, **kwargs):
    """Like call_mcp_tool, but awaitable: asyncio.gather(...) runs calls in parallel."""
    return await _arequest(_tool_request("acall_mcp_tool", name, args, tool_args, kwargs))


class _Kept:
    """Stands for a tool's large text that the host kept and did not send: the value of a
    tail call (`_tail`), which is the run's result as it is and goes back as a reference to
    the host's copy, so no code ever holds one."""

    __slots__ = ()

    def __repr__(self):
        return "<a tool's text kept on the host>"


def _tail(f, awaited=False):
    """What the code's last statement calls, when it is a call whose value is the result
    (`_compile`, outside a session; `awaited`: the statement awaits it): our tool functions,
    as tail calls, when the call's value is the result (a blocking call not awaited, an
    awaitable one awaited); anything else as it is. A tail call tells the host that its value
    is returned as it is, so a large text reply can stay on the host (`{"type": "kept"}`):
    the worker never decodes it, and the result refers to the host's copy."""
    if f is call_mcp_tool:
        return _tail_call_mcp_tool
    if f is acall_mcp_tool and awaited:
        return _tail_acall_mcp_tool
    if type(f) is _Tool and (awaited or not f._async):
        return f._tail
    return f


def _tail_call_mcp_tool(name, args=None, tool_args=None, /, **kwargs):
    return _call(_tool_request("call_mcp_tool", name, args, tool_args, kwargs), tail=True)


async def _tail_acall_mcp_tool(name, args=None, tool_args=None, /, **kwargs):
    return await _arequest(_tool_request("acall_mcp_tool", name, args, tool_args, kwargs), True)


def _no_extra(fn, kw, accepted):
    """Unknown keyword options are an error naming the accepted ones."""
    if kw:
        raise TypeError(
            "%s() got unexpected keyword argument%s %s; it accepts %s"
            % (fn, "s" if len(kw) > 1 else "", ", ".join(map(repr, sorted(kw))), accepted)
        )


def list_servers(**kw):
    """Configured upstream servers with status and tool counts."""
    _no_extra("list_servers", kw, "no arguments")
    return _call({"op": "list_servers"})


def _search_request(query, detail, server, limit, cursor=None):
    request = {"op": "search_tools", "query": str(query)}
    if cursor is not None:
        request["cursor"] = str(cursor)
    if detail is not None:
        request["detail"] = str(detail)
    if server is not None:
        request["server"] = str(server)
    if limit is not None:
        request["limit"] = int(limit)
    return request


def search_tools(query, detail=None, server=None, limit=None, cursor=None, **kw):
    """Ranked search over every upstream tool; detail: 'names', 'summary' or 'full';
    cursor: a previous answer's nextCursor."""
    _no_extra("search_tools", kw, "query, detail, server, limit, cursor")
    return _call(_search_request(query, detail, server, limit, cursor))


def get_tool_schema(name=None, tool=None, server=None, **kw):
    """Input and output JSON Schema of one tool: get_tool_schema('mcp__server__tool') or
    get_tool_schema('server', 'tool') (also server=, tool=)."""
    _no_extra("get_tool_schema", kw, "name ('mcp__server__tool'), or server and tool")
    if server is not None and name is not None and tool is None:
        name, tool = server, name  # get_tool_schema('tool', server='s')
    elif server is not None:
        if name is not None:
            raise TypeError("get_tool_schema: pass the name 'mcp__server__tool', or server and tool, not both")
        name = server
    if name is None:
        raise TypeError("get_tool_schema() needs a tool: get_tool_schema('mcp__server__tool') or get_tool_schema('server', 'tool')")
    if tool is not None:
        name = "mcp__%s__%s" % (name, tool)
    return _call({"op": "get_tool_schema", "name": str(name)})


class ToolList(list):
    """What discover_mcp_tools() gives: the visible tools as a list (len, index, iteration,
    slices), each {name, server, tool, description, inputSchema, ...}. The earlier shape's
    keys read as before: result['tools'] is the list itself, result['unavailable'] the
    servers that could not be reached (also `.unavailable`)."""

    __slots__ = ("unavailable",)
    _KEYS = ("tools", "unavailable")

    def __init__(self, answer=()):
        answer = answer if isinstance(answer, _collections_abc.Mapping) else {"tools": answer}
        super().__init__(answer.get("tools") or ())
        self.unavailable = list(answer.get("unavailable") or ())

    def __getitem__(self, key):
        if isinstance(key, str):
            if key == "tools":
                return self
            if key == "unavailable":
                return self.unavailable
            raise KeyError(key)
        return list.__getitem__(self, key)

    def get(self, key, default=None):
        return self[key] if key in self._KEYS else default

    def keys(self):
        return list(self._KEYS)

    def __contains__(self, item):
        return item in self._KEYS if isinstance(item, str) else list.__contains__(self, item)

    __await__ = _await_self


def discover_mcp_tools(**kw):
    """Every visible tool with its schema, as a list (ToolList)."""
    _no_extra("discover_mcp_tools", kw, "no arguments")
    return _call({"op": "discover_tools"}, ToolList)


_MISSING = object()


def store(key, value=_MISSING):
    """Keeps a JSON value on the host under `key` for this session's later executions (it
    survives the worker); store(key) with no value forgets the key."""
    if not isinstance(key, str):
        raise TypeError("store: the key must be a string, got %s" % _repr(key))
    request = {"op": "store", "key": key}
    if value is _MISSING:
        request["delete"] = True
    else:
        request["value"] = _jsonable(value, 0, _Strict("store: the value"))
    return _call(request, _nothing)


def _nothing(_answer):
    return None


def load(key, default=None):
    """The value stored under `key` in this session, or `default`."""
    if not isinstance(key, str):
        raise TypeError("load: the key must be a string, got %s" % _repr(key))
    return _call(
        {"op": "load", "key": key},
        lambda answer: answer.get("value") if answer.get("found") else default,
    )


def save_skill(name, code, description, input_schema=None, language="python"):
    """Keeps `code` as a skill named `name` (Agent Skills naming: lowercase, digits,
    hyphens) in the user's skills directory; `description` says what it does and when to
    use it. Saving over a skill keeps the previous version. Returns what was saved."""
    if not isinstance(name, str):
        raise TypeError("save_skill: the name must be a string, got %s" % _repr(name))
    if not isinstance(code, str) or not isinstance(description, str):
        raise TypeError("save_skill: code and description must be strings")
    request = {"op": "save_skill", "name": name, "code": code, "description": description,
               "language": str(language)}
    if input_schema is not None:
        request["input_schema"] = _jsonable(input_schema, 0, _Strict("save_skill: the input schema"))
    return _call(request)


def list_skills():
    """Every skill: name, description, origin, language, and what changed under it."""
    return _call({"op": "list_skills"})


def _skill_answer(name, answer):
    for w in answer.get("warnings") or []:
        _log("warn", "[skill %s] %s" % (name, w))
    for line in answer.get("logs") or []:
        print("[skill %s] %s" % (name, line))
    return answer.get("result")


class _Skills:
    """`skills.name(**args)` runs a saved skill, whatever its language, as an execution of its
    own with what this one may do; `askills.name(**args)` is the awaitable form."""

    __slots__ = ("_async",)

    def __init__(self, is_async):
        self._async = is_async

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self[name]

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError("skills[...]: a skill's name is a string")
        if self._async:
            async def call(args=None, /, **kwargs):
                answer = await _arequest({"op": "run_skill", "name": name,
                                          "args": _skill_args(name, args, kwargs)})
                return _skill_answer(name, answer)
        else:
            def call(args=None, /, **kwargs):
                return _call({"op": "run_skill", "name": name,
                              "args": _skill_args(name, args, kwargs)},
                             lambda answer: _skill_answer(name, answer))
        call.__name__ = name
        return call

    def __dir__(self):
        skills = _request({"op": "list_skills"}).get("skills", [])
        return [s["name"].replace("-", "_") for s in skills]

    def __repr__(self):
        return "<skills: list_skills() shows them>"


def _skill_args(name, args, kwargs):
    if args is not None and not isinstance(args, dict):
        raise TypeError("skills.%s: pass arguments by name, or one dict, not %s" % (name, _repr(args)))
    merged = dict(args or {})
    merged.update(kwargs)
    return _jsonable(merged, 0, _Strict("skills.%s: the arguments" % name))


def _finite(v):
    return type(v) is not bool and isinstance(v, (int, float)) and math.isfinite(v)


def progress(done, total=None, message=None):
    """Reports how far the code is: progress(done), progress(done, total),
    progress(done, total, "message") or progress(done, "message"). The host keeps the latest
    for whoever polls the execution and tells a client that asked for progress."""
    if isinstance(total, str) and message is None:
        total, message = None, total
    if not _finite(done) or done < 0:
        raise ValueError("progress: done must be a finite number >= 0, got %s" % _repr(done))
    request = {"op": "progress", "done": float(done)}
    if total is not None:
        if not _finite(total) or total <= 0:
            raise ValueError("progress: total must be a finite number > 0, got %s" % _repr(total))
        request["total"] = float(total)
    if message is not None:
        request["message"] = _clean(str(message))
    return _call(request, _nothing)


# ---------------------------------------------------------------------------- model calls
def _llm_request(fn, messages, system, max_tokens, model):
    request = {"op": "llm", "messages": messages}
    if system is not None:
        if not isinstance(system, str):
            raise TypeError("%s: system must be a str, got %s" % (fn, _repr(system)))
        request["system"] = system
    if max_tokens is not None:
        if type(max_tokens) is not int or max_tokens < 1:
            raise TypeError("%s: max_tokens must be a positive int, got %s" % (fn, _repr(max_tokens)))
        request["max_tokens"] = max_tokens
    if model is not None:
        request["model"] = str(model)
    return request


def _llm_messages(fn, messages):
    if isinstance(messages, (str, bytes)) or not isinstance(messages, _collections_abc.Iterable):
        raise TypeError("%s: messages must be a list of {'role', 'content'}, got %s" % (fn, _repr(messages)))
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, _collections_abc.Mapping) or "role" not in m:
            raise TypeError("%s: messages[%d] must be {'role', 'content'}" % (fn, i))
        extra = sorted(repr(k) for k in m if k not in ("role", "content"))
        if extra:
            # As TypeScript's llm.think: a key a message does not take is named, never dropped.
            raise TypeError(
                "%s: messages[%d] got unexpected key%s %s; it accepts 'role', 'content'"
                % (fn, i, "s" if len(extra) > 1 else "", ", ".join(extra))
            )
        if not isinstance(m["role"], str):
            raise TypeError(
                "%s: messages[%d]['role'] must be 'user' or 'assistant', got %s"
                % (fn, i, _repr(m["role"]))
            )
        content = m.get("content", "")
        if not isinstance(content, str):
            # A prompt is text: a dict here (a tool's structured result, say) is a mistake
            # worth naming, not something to send the model as its repr or JSON.
            raise TypeError(
                "%s: messages[%d]['content'] must be a str, got %s; pass the text (a field of it, or json.dumps(value))"
                % (fn, i, _repr(content))
            )
        out.append({"role": m["role"], "content": content})
    return out


def _ask_request(fn, prompt, system, max_tokens, model):
    if not isinstance(prompt, str):
        raise TypeError(
            "%s: the prompt must be a str, got %s; pass the text (a field of it, or json.dumps(value))"
            % (fn, _repr(prompt))
        )
    return _llm_request(fn, [{"role": "user", "content": prompt}], system, max_tokens, model)


# The options of llm.ask / llm.think under every name they go by: the documented ones
# (system_prompt, max_tokens, model), our earlier `system`, and TypeScript's camelCase.
_LLM_ALIASES = {"system": "system_prompt", "systemPrompt": "system_prompt", "maxTokens": "max_tokens"}
_LLM_ACCEPTS = "system_prompt (or system, systemPrompt), max_tokens (or maxTokens), model"


def _llm_options(fn, opts, kw):
    """(system, max_tokens, model) from the named parameters `opts` and the other keyword
    arguments `kw` (aliases); anything else is an error naming what is accepted. An empty
    system prompt or model (the documented defaults) means none: the host's default."""
    for name in list(kw):
        canon = _LLM_ALIASES.get(name)
        if canon is None:
            continue
        value = kw.pop(name)
        if opts[canon] not in (None, "") and value not in (None, ""):
            raise TypeError("%s() got %s twice (as %s and %s)" % (fn, canon, canon, name))
        if value not in (None, ""):
            opts[canon] = value
    _no_extra(fn, kw, _LLM_ACCEPTS)
    system = opts["system_prompt"]
    if system is not None and not isinstance(system, str):
        raise TypeError("%s: system_prompt must be a str, got %s" % (fn, _repr(system)))
    return system or None, opts["max_tokens"], opts["model"] or None


def _think_args(fn, messages, kw):
    """llm.think also takes TypeScript's one object, {messages, systemPrompt?, model?,
    maxTokens?}: its keys join the keyword arguments."""
    if isinstance(messages, _collections_abc.Mapping) and "messages" in messages:
        options = dict(messages)
        messages = options.pop("messages")
        for name, value in options.items():
            if name in kw:
                raise TypeError("%s() got %s twice" % (fn, name))
            kw[name] = value
    return messages


class _Llm:
    """Model calls, answered by the client's sampling or the configured provider:
    llm.ask(prompt, system_prompt='', max_tokens=None, model='') -> str;
    llm.think(messages, model='', max_tokens=None, system_prompt='') -> str (a multi-turn
    conversation of {'role': 'user'|'assistant', 'content': str}). Blocking, or awaited
    (`await llm.ask(...)`); `system=` and `maxTokens=` are accepted too, and the older
    awaitable names llm.aask(...) and llm.athink(...)."""

    __slots__ = ()

    def ask(self, prompt, system_prompt="", max_tokens=None, model="", **kw):
        opts = {"system_prompt": system_prompt, "max_tokens": max_tokens, "model": model}
        return _call(_ask_request("llm.ask", prompt, *_llm_options("llm.ask", opts, kw)))

    async def aask(self, prompt, system_prompt="", max_tokens=None, model="", **kw):
        opts = {"system_prompt": system_prompt, "max_tokens": max_tokens, "model": model}
        return await _arequest(_ask_request("llm.aask", prompt, *_llm_options("llm.aask", opts, kw)))

    def think(self, messages=None, model="", max_tokens=None, system_prompt="", **kw):
        messages = _think_args("llm.think", messages, kw)
        opts = {"system_prompt": system_prompt, "max_tokens": max_tokens, "model": model}
        options = _llm_options("llm.think", opts, kw)
        return _call(_llm_request("llm.think", _llm_messages("llm.think", messages), *options))

    async def athink(self, messages=None, model="", max_tokens=None, system_prompt="", **kw):
        messages = _think_args("llm.athink", messages, kw)
        opts = {"system_prompt": system_prompt, "max_tokens": max_tokens, "model": model}
        options = _llm_options("llm.athink", opts, kw)
        return await _arequest(
            _llm_request("llm.athink", _llm_messages("llm.athink", messages), *options)
        )

    def __repr__(self):
        return "<llm: ask, think (blocking or awaited); aask, athink>"


llm = _Llm()


# ------------------------------------------------------------------------- network: fetch
# The sandbox has no network: the host makes each request, if this execution was granted the
# destination (permissions.net), follows redirects (each hop checked), and answers with the
# whole body (capped). urllib.request is routed through it too (`_install_urllib`).
class FetchHeaders:
    """Response headers: case-insensitive; repeated headers joined with ', '."""

    def __init__(self, pairs):
        self._pairs = [(str(k).lower(), str(v)) for k, v in pairs]

    def get(self, name, default=None):
        n = str(name).lower()
        vs = [v for k, v in self._pairs if k == n]
        return ", ".join(vs) if vs else default

    def get_all(self, name):
        n = str(name).lower()
        return [v for k, v in self._pairs if k == n]

    def __getitem__(self, name):
        v = self.get(name)
        if v is None:
            raise KeyError(name)
        return v

    def __contains__(self, name):
        return self.get(name) is not None

    def keys(self):
        return sorted({k for k, _ in self._pairs})

    def items(self):
        return [(k, self.get(k)) for k in self.keys()]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def __repr__(self):
        return "FetchHeaders(%r)" % dict(self.items())


class FetchResponse:
    """The answer to fetch(): status, reason, ok, headers, url, redirected, content (bytes),
    text(), json()."""

    def __init__(self, answer):
        self.status = int(answer.get("status") or 0)
        self.reason = answer.get("status_text") or ""
        self.url = answer.get("url") or ""
        self.redirected = bool(answer.get("redirected"))
        self.headers = FetchHeaders(answer.get("headers") or [])
        self.content = binascii.a2b_base64(answer.get("body") or "")

    @property
    def ok(self):
        return 200 <= self.status < 300

    status_code = property(lambda self: self.status)
    # `r = fetch(...)` kept in async code can be awaited too (`_call`).
    __await__ = _await_self

    def text(self, encoding="utf-8"):
        return self.content.decode(encoding, "replace")

    def json(self):
        import json

        return json.loads(self.content)

    def raise_for_status(self):
        if not self.ok:
            raise ToolError("%s: %s %s" % (self.url, self.status, self.reason))
        return self

    def __repr__(self):
        return "<FetchResponse %d %s>" % (self.status, self.url)


def _fetch_request(url, method, headers, body, json_body, redirect):
    if json_body is not _MISSING:
        if body is not None:
            raise TypeError("fetch: pass body or json, not both")
        import json as _json_module

        body = _json_module.dumps(_jsonable(json_body, 0, _Strict("fetch: the json body"))).encode()
        headers = dict(headers or {})
        if not any(str(k).lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/json"
    if isinstance(headers, _collections_abc.Mapping):
        pairs = [[str(k), str(v)] for k, v in headers.items()]
    elif headers is None:
        pairs = []
    else:
        pairs = [[str(k), str(v)] for k, v in headers]
    request = {"op": "fetch", "url": str(url), "method": str(method).upper(), "headers": pairs}
    if body is not None:
        if isinstance(body, str):
            body = body.encode()
        elif isinstance(body, _collections_abc.Mapping):
            import urllib.parse

            body = urllib.parse.urlencode(body).encode()
            if not any(p[0].lower() == "content-type" for p in pairs):
                pairs.append(["Content-Type", "application/x-www-form-urlencoded"])
        elif not isinstance(body, (bytes, bytearray, memoryview)):
            raise TypeError("fetch: body must be str, bytes or a dict, not %s" % type(body).__name__)
        request["body"] = _b64encode(body)
    if redirect is not None:
        request["redirect"] = str(redirect)
    return request


def fetch(url, method="GET", headers=None, body=None, json=_MISSING, redirect="follow"):
    """HTTP request made by the host (permissions.net must grant the destination). Returns a
    FetchResponse; raises PolicyError (not granted), NetworkError, LimitError."""
    return _call(_fetch_request(url, method, headers, body, json, redirect), FetchResponse)


async def afetch(url, method="GET", headers=None, body=None, json=_MISSING, redirect="follow"):
    """Like fetch, but awaitable: asyncio.gather(...) runs requests in parallel."""
    return FetchResponse(
        await _arequest(_fetch_request(url, method, headers, body, json, redirect))
    )


class _ImportHook:
    """Sets up what the shim changes in a module whenever that module is loaded, by the code,
    by another module, or ahead of time (`_prefetch`): urllib.request through the host (its
    import costs tens of milliseconds, which runs that never use it should not pay), logging
    captured, linecache holding code.py, asyncio loaded without ssl. The module is found by the
    other finders and loaded by its own loader; only its execution is wrapped."""

    def find_spec(self, name, path=None, target=None):
        if name not in _AFTER_IMPORT and name != "asyncio":
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _WrappedLoader(spec.loader)
        return spec


class _WrappedLoader:
    __slots__ = ("loader",)

    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, attr):
        return getattr(self.loader, attr)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        # The module keeps its own loader (resources, source, reload), as if imported plainly.
        loader = self.loader
        module.__loader__ = loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = loader
        name = module.__name__
        if name == "asyncio" and "ssl" not in sys.modules:
            # asyncio would import ssl, which costs as much as asyncio itself and is useless
            # without a network: asyncio runs without TLS, and code can still import ssl itself.
            sys.modules["ssl"] = None
            try:
                loader.exec_module(module)
            finally:
                if sys.modules.get("ssl", 0) is None:
                    del sys.modules["ssl"]
        else:
            loader.exec_module(module)
        setup = _AFTER_IMPORT.get(name)
        if setup is not None:
            setup(module)


def _fill_linecache(linecache):
    """linecache knows code.py (for tracebacks and warnings of the code)."""
    code = _State.source
    if code is not None:
        linecache.cache[SOURCE_NAME] = (len(code), None, code.splitlines(True), SOURCE_NAME)


def _install_hooks():
    """What `_ImportHook` sets up, now for the modules loaded already (a .pth file of
    site-packages may have loaded some), later for the others."""
    for name, setup in _AFTER_IMPORT.items():
        module = sys.modules.get(name)
        if module is not None:
            setup(module)
    if not any(isinstance(f, _ImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportHook())


def _install_urllib(request_module):
    """Routes urllib.request's http and https URLs through fetch(): urlopen works unchanged
    (HTTPError for non-2xx answers, as usual)."""
    if _State.urllib_installed:
        return
    _State.urllib_installed = True
    import email.parser
    import http.client
    import urllib.error
    import urllib.response

    class HostHTTPHandler(request_module.BaseHandler):
        handler_order = 100

        def http_open(self, req):
            data = req.data
            if data is not None and not isinstance(data, (bytes, bytearray, str)):
                data = b"".join(bytes(c) for c in data)
            headers = list(req.header_items())
            try:
                r = fetch(req.full_url, req.get_method(), headers, data, redirect="follow")
            except NetworkError as e:
                raise urllib.error.URLError(e.message) from None
            text = "".join("%s: %s\r\n" % (k, v) for k, v in r.headers._pairs)
            msg = email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)
            resp = urllib.response.addinfourl(io.BytesIO(r.content), msg, r.url, r.status)
            resp.reason = resp.msg = r.reason
            return resp

        https_open = http_open

    opener = request_module.OpenerDirector()
    for h in (
        HostHTTPHandler(),
        request_module.HTTPDefaultErrorHandler(),
        request_module.HTTPErrorProcessor(),
        request_module.UnknownHandler(),
    ):
        opener.add_handler(h)
    request_module.install_opener(opener)


# Audit events of `os` functions that change the file system: a failure of one is a write's.
_WRITE_EVENTS = frozenset((
    "os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.link", "os.symlink", "os.chmod",
    "os.chown", "os.truncate", "os.utime", "os.mkfifo", "os.mknod", "os.setxattr",
    "os.removexattr",
))


def _audit_open(event, args):
    # Remembers the last file opened (path and mode), or changed by an `os` function (as a
    # write), so that a failure can say whether the read or the write grant is missing. Audit
    # hooks cannot be removed: this one only records, and refuses any other (one added
    # through ctypes' PySys_AddAuditHook too: CPython asks the hooks first, and an exception
    # keeps the new one out). A hook of code would outlive its execution in a session and see
    # the next one's code before it runs.
    if event == "open":
        _State.last_open = args
    elif event in _WRITE_EVENTS and args:
        _State.last_open = (args[0], "w", 0)
    elif event == "sys.addaudithook":
        raise RuntimeError(_NO_AUDIT_HOOKS)


_NO_AUDIT_HOOKS = (
    "sys.addaudithook is not available in the sandbox: an audit hook cannot be removed, so "
    "it would outlive this execution (in a session, it would see the next one's code)"
)


def _no_audit_hooks(hook):
    """sys.addaudithook, refused loudly (the audit hook above refuses it silently, as
    CPython makes a hook's refusal)."""
    raise PermissionError(_NO_AUDIT_HOOKS)


_real_open = io.open


def _open(file, *args, **kwargs):
    """io.open, whose OSError says which grant is missing (in its message, also when caught)."""
    try:
        return _real_open(file, *args, **kwargs)
    except OSError as e:
        try:
            hint = _grant_hint(e)
            if hint and isinstance(e.strerror, str) and hint not in e.strerror:
                e.strerror += hint
        except Exception:  # noqa: BLE001 - a hint is optional
            pass
        raise


_open.__doc__ = _real_open.__doc__
_open.__name__ = "open"


# The sandbox's own processes that share a run's RLIMIT_NPROC (its helper and the namespace's
# init: HELPER_PROCESSES in crates/sandbox/src/limits.rs).
_SANDBOX_TASKS = 2


def _task_limit_hint(exc, message):
    """A sentence naming the sandbox's limit on processes and threads when a thread or a
    process could not start because of it (RuntimeError "can't start new thread", fork's
    EAGAIN), or ''. Without the sentence the user sees only Python's bare message."""
    import errno as _errno

    thread = isinstance(exc, RuntimeError) and "start new thread" in message
    fork = isinstance(exc, BlockingIOError) and exc.errno == _errno.EAGAIN
    if not (thread or fork) or resource is None:
        return ""
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft == resource.RLIM_INFINITY or soft <= _SANDBOX_TASKS:
        return ""
    # pthread_create says EAGAIN for the stack's memory too: name both limits.
    return (
        " (the sandbox allows a run %d processes and threads at once, the interpreter's own "
        "included, and each thread's stack counts against the memory limit: join finished "
        "threads first, or use a pool such as "
        "concurrent.futures.ThreadPoolExecutor(max_workers=8))" % (soft - _SANDBOX_TASKS)
    )


def _grant_hint(exc):
    """A sentence naming the grant a failed file access lacks, or ''."""
    import errno as _errno

    name = getattr(exc, "filename", None)
    if not isinstance(name, (str, bytes)) or exc.errno not in (
        _errno.ENOENT, _errno.EACCES, _errno.EPERM, _errno.EROFS, _errno.ENOTDIR, _errno.EXDEV,
    ):
        return ""
    path = os.path.normpath(os.path.join(os.getcwd(), os.fsdecode(name)))
    access = _State.access or {}
    last = _State.last_open
    writing = False
    if last and len(last) >= 3 and last[0] is not None:
        try:
            same = os.path.normpath(os.path.join(os.getcwd(), os.fsdecode(last[0]))) == path
        except (TypeError, ValueError):
            same = False
        mode, flags = last[1], last[2] or 0
        writing = same and (
            (isinstance(mode, str) and any(c in mode for c in "wax+"))
            or bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        )
    reads = access.get("read") or []
    ws = access.get("workspace")
    inside = lambda root: path == root or path.startswith(root.rstrip("/") + "/")
    # A write (EROFS and EXDEV come only from one): the write grant is what is missing.
    if writing or exc.errno in (_errno.EROFS, _errno.EXDEV):
        if ws and inside(ws):
            return ""
        if ws:
            return " (only the workspace %s is writable)" % ws
        return (" (nothing is writable: this execution has no workspace; ask for one with "
                "permissions.write, within the server's configured ceiling)")
    roots = [r for r in reads + ([ws] if ws else []) if inside(r)]
    if not roots:
        return (" (no read grant covers %s; granted: %s; ask with permissions.read, within "
                "the server's configured ceiling)" % (path, ", ".join(reads) or "none"))
    if exc.errno in (_errno.ENOENT, _errno.ENOTDIR) and os.path.islink(path):
        return " (a symlink that leads outside the granted paths finds nothing)"
    if exc.errno in (_errno.EACCES, _errno.EPERM):
        return _refused(path, max(roots, key=len))
    return ""


def _refused(path, root):
    """Why a read of `path`, inside the grant `root`, is refused by the files' own permissions:
    the first component on its way (from the grant down) the sandbox may not search, or the
    path itself when it may not read it, with its mode and whose it is."""
    steps = [root]
    for part in os.path.relpath(path, root).split(os.sep):
        if part not in ("", "."):
            steps.append(os.path.join(steps[-1], part))
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        if os.access(step, os.R_OK if last else os.X_OK):
            continue
        try:
            st = os.stat(step)
        except OSError:
            break
        whose = "the sandbox's user" if st.st_uid == os.getuid() else "another user than the sandbox's"
        return (" (a read grant covers %s, but the file permissions refuse the sandbox: %s is "
                "mode %04o, owned by %s, and may not be %s; the sandbox reads a grant as the "
                "owner of the granted path: on the host, make it readable (chmod) or grant it "
                "by its own path)" % (path, step, st.st_mode & 0o7777, whose,
                                      "read" if last else "searched"))
    return " (a read grant covers %s, but the file permissions refuse the sandbox)" % path


# ------------------------------------------------------------------------- tool proxies
def _ident(name):
    """The identifier form of a name: every character that cannot be in an identifier becomes
    `_`, a leading digit gets a `_` prefix, a keyword gets a `_` suffix."""
    s = "".join(c if c in _IDENT_CHARS else "_" for c in name)
    if s[:1].isdigit():
        s = "_" + s
    if _iskeyword(s):
        s += "_"
    return s


_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _iskeyword(s):
    import keyword

    return keyword.iskeyword(s)


class _Tool:
    __slots__ = ("_server", "_tool", "_async")

    def __init__(self, server, tool, is_async):
        self._server = server
        self._tool = tool
        self._async = is_async

    @property
    def signature(self):
        """The tool's Python declaration (TypedDicts from its JSON Schemas and a stub), asked
        of the host when read."""
        try:
            return _request(
                {"op": "signature", "server": self._server, "tool": self._tool, "language": "python"}
            )
        except Exception:  # noqa: BLE001 - a tool not known (yet) has no declaration to show
            return None

    def __call__(self, *args, **kwargs):
        return self._call(args, kwargs, False)

    def _tail(self, *args, **kwargs):
        return self._call(args, kwargs, True)

    def _call(self, args, kwargs, tail):
        if len(args) > 1:
            raise TypeError(
                "tools.%s.%s() takes keyword arguments or one dict" % (self._server, self._tool)
            )
        given = args[0] if args else None
        fn = "acall_mcp_tool" if self._async else "call_mcp_tool"
        request = _tool_request(fn, self._server, self._tool, given, kwargs)
        request.pop("shape", None)  # the structured shape, the default
        if self._async:
            return _arequest(request, tail)
        # Blocking or awaited, as the calling code uses it (`_call`), as call_mcp_tool is.
        return _call(request, tail=tail)

    def __repr__(self):
        return "<tool mcp__%s__%s>" % (self._server, self._tool)


class _Server:
    """`tools.server`: its tools by name and identifier form. Any other name that is not a
    dunder (a server not started yet, whose tools are not known; a name the server does not
    have; a server that is not configured) is a tool function too, which the host resolves
    when called: an unknown tool is then the host's one ToolError naming the nearest names,
    whenever and however it is reached, as in TypeScript."""

    def __init__(self, name, tools, is_async, configured=True):
        self._name = name
        self._async = is_async
        self._tools = tools
        self._names = None
        self._configured = configured

    @property
    def _known(self):
        """Name and identifier form -> tool, made on first use; None: the server has not
        started yet, so any name is passed to the host to resolve."""
        if self._tools is not None and self._names is None:
            known = {}
            for tool in self._tools:
                known[tool] = tool
            for tool in self._tools:
                known.setdefault(_ident(tool), tool)
            self._names = known
        return self._names

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self[attr]

    def __getitem__(self, name):
        known = self._known
        if known is not None:
            name = known.get(name, name)
        return _Tool(self._name, str(name), self._async)

    def __dir__(self):
        return sorted(self._known or ())

    def __repr__(self):
        if not self._configured:
            return "<server %s: not configured>" % self._name
        return "<server %s: %s>" % (self._name, ", ".join(self.__dir__()) or "tools not known yet")


def _group(bindings):
    """The run's tools by server, in the host's order: server -> tool names, or None when not
    known yet."""
    servers = {}
    for b in bindings:
        server = b.get("server")
        tool = b.get("tool")
        names = servers.setdefault(server, None)
        if tool is not None:
            if names is None:
                names = servers[server] = []
            names.append(tool)
    return servers


class _Tools:
    """`tools` (and `atools`): made when code first touches them, like each server's names,
    so a run that does not use them pays nothing for them."""

    def __init__(self, bindings, is_async):
        self._bindings = bindings
        self._async = is_async
        self._built = None
        self._unknown = {}

    def _build(self):
        """(proxy by name and identifier form, server names in the host's order)."""
        if self._built is None:
            grouped = _group(self._bindings)
            servers = {s: _Server(s, names, self._async) for s, names in grouped.items()}
            for server in grouped:
                servers.setdefault(_ident(server), servers[server])
            self._built = (servers, list(grouped))
        return self._built

    @property
    def _servers(self):
        return self._build()[0]

    @property
    def _names(self):
        return self._build()[1]

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self[attr]

    def __getitem__(self, name):
        servers = self._servers
        proxy = servers.get(name)
        if proxy is None:
            # Not configured: its calls are refused by the host as an unknown tool naming the
            # nearest servers; it is not listed (`dir`, `in dir(tools)`).
            unknown = self._unknown
            proxy = unknown.get(name)
            if proxy is None:
                proxy = unknown[name] = _Server(str(name), None, self._async, configured=False)
        return proxy

    def __dir__(self):
        return sorted(self._servers)

    def __repr__(self):
        return "<tools: %s>" % (", ".join(self._names) or "no servers")


# -------------------------------------------------------------------------------- runs
class _Return(BaseException):
    """A top-level `return x` (allowed for symmetry with execute_typescript)."""

    def __init__(self, value):
        super().__init__()
        self.value = value


def _cem_return(value=None):
    raise _Return(value)


# The code is parsed with the C `_ast` module: `ast` (with enum and contextlib) is not needed
# to turn a tree around. Both walks below are what ast.NodeTransformer and copy_location did.
_SCOPES = (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef, _ast.Lambda)


def _at(node, like):
    """`node` at the position of `like` (ast.copy_location)."""
    node.lineno = like.lineno
    node.col_offset = like.col_offset
    node.end_lineno = getattr(like, "end_lineno", None)
    node.end_col_offset = getattr(like, "end_col_offset", None)
    return node


def _top_level_returns(node):
    """Turns `return x` outside any function into `__cem_return__(x)`, in place."""
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, _ast.Return):
                    func = _at(_ast.Name(id="__cem_return__", ctx=_ast.Load()), item)
                    args = [item.value] if item.value is not None else []
                    call = _at(_ast.Call(func=func, args=args, keywords=[]), item)
                    value[i] = _at(_ast.Expr(value=call), item)
                elif isinstance(item, _ast.AST) and not isinstance(item, _SCOPES):
                    _top_level_returns(item)
        elif isinstance(value, _ast.AST) and not isinstance(value, _SCOPES):
            _top_level_returns(value)


# Code of at most this many characters on one line is tried as one expression first.
_ONE_LINE = 4096


def _tail_call(node):
    """Routes the call whose value `node` is (`f(...)` or `await f(...)`) through `_tail`, in
    place: `f` is evaluated as before, then handed to `_tail`, then the arguments, then the
    call, so only our tool functions change (to tail calls) and everything else is called as
    written."""
    awaited = isinstance(node, _ast.Await)
    if awaited:
        node = node.value
    if isinstance(node, _ast.Call) and isinstance(node.func, (_ast.Name, _ast.Attribute)):
        wrap = _at(_ast.Name(id="__cem_tail__", ctx=_ast.Load()), node.func)
        args = [node.func, _at(_ast.Constant(value=awaited), node.func)]
        node.func = _at(_ast.Call(func=wrap, args=args, keywords=[]), node.func)


def _compile(code, tail=False):
    """(the code compiled, whether it is one expression whose value is the result).

    `tail` (outside a session): a last statement whose value is a call's (`f(...)`, `await
    f(...)`, `return f(...)`) makes that call through `_tail`.

    Code is parsed to a syntax tree, its last expression made the result (and a top-level
    `return` a call), then compiled. A one-line expression is compiled straight to its value
    instead ("eval" mode accepts exactly the one-line programs that are one expression, and
    their value is the one the tree would give): building the tree in Python objects and
    compiling it again is the longest step of a small run while a worker's caches are cold
    after idle (about 110 -> 50 µs for `1 + 1`). Whatever "eval" refuses takes the tree's way,
    which reports the code's own errors."""
    if len(code) <= _ONE_LINE:
        text = code.strip()
        if text and "\n" not in text and "\r" not in text:
            try:
                flags = _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                if tail and ("tools" in text or "call_mcp_tool" in text):
                    # A one-line tool call: its tree, to make the call a tail call.
                    tree = compile(
                        code, SOURCE_NAME, "eval", flags=flags | _ast.PyCF_ONLY_AST,
                        dont_inherit=True,
                    )
                    _tail_call(tree.body)
                    code = tree
                return compile(code, SOURCE_NAME, "eval", flags=flags, dont_inherit=True), True
            except SyntaxError:
                pass
    flags = _ast.PyCF_ONLY_AST | _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(code, SOURCE_NAME, "exec", flags=flags, dont_inherit=True)
    if tail and tree.body and isinstance(tree.body[-1], (_ast.Expr, _ast.Return)):
        _tail_call(tree.body[-1].value)
    if "return" in code:
        # Only code that says `return` can have one at top level: the walk costs the rest.
        _top_level_returns(tree)
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = tree.body[-1]
        target = _at(_ast.Name(id=_RESULT, ctx=_ast.Store()), last)
        tree.body[-1] = _at(_ast.Assign(targets=[target], value=last.value), last)
    codeobj = compile(
        tree, SOURCE_NAME, "exec", flags=_ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    return codeobj, False


def _user_frames(tb):
    import traceback

    frames = traceback.extract_tb(tb)
    start = next((i for i, f in enumerate(frames) if f.filename == SOURCE_NAME), len(frames))
    return [f for f in frames[start:] if f.filename != SHIM_NAME]


def _describe(exc):
    name = type(exc).__name__
    if isinstance(exc, SyntaxError) and exc.filename == SOURCE_NAME:
        import traceback

        lines = traceback.format_exception_only(type(exc), exc)
        stack = "".join(lines[:-1]).rstrip("\n") or None
        return {
            "name": name,
            "message": "%s (%s:%s:%s)" % (exc.msg, SOURCE_NAME, exc.lineno, exc.offset),
            "stack": stack,
        }
    message = str(exc)
    if isinstance(exc, OSError):
        try:
            hint = _grant_hint(exc)
            if hint not in message:
                message += hint
        except Exception:  # noqa: BLE001 - a hint is optional
            pass
    if isinstance(exc, RuntimeError) and message.startswith("asyncio.run() cannot be called"):
        message += (
            " (this code already runs in an event loop, because it awaits at top level or is "
            "inside a coroutine: await the coroutine instead, `await main()` for "
            "`asyncio.run(main())`)"
        )
    if isinstance(exc, (RuntimeError, BlockingIOError)):
        try:
            message += _task_limit_hint(exc, message)
        except Exception:  # noqa: BLE001 - a hint is optional
            pass
    if isinstance(exc, MemoryError):
        message = "out of memory: the engine's limit of %d MiB was reached%s" % (
            _State.memory_bytes // (1024 * 1024),
            " (%s)" % message if message else "",
        )
    frames = _user_frames(exc.__traceback__)
    stack = None
    if frames:
        import traceback

        stack = "Traceback (most recent call last):\n" + "".join(
            traceback.format_list(frames)
        ).rstrip("\n")
    return {"name": name, "message": _clean(message), "stack": stack}


def _address_space():
    """The interpreter's address space (VmSize), or None."""
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        return None


def _limit_memory(memory_bytes):
    """The engine memory limit: address space at rest plus `memory_bytes`, below the sandbox's
    hard limit, so a memory bomb ends in MemoryError rather than a killed process. The address
    space is measured before the worker reports ready (`_State.idle_vm`), off the run's path."""
    vm = _State.idle_vm
    if resource is None or memory_bytes <= 0 or vm is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = vm + memory_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        return None
    return soft, hard


def _restore_memory(saved):
    if saved is not None:
        try:
            resource.setrlimit(resource.RLIMIT_AS, saved)
        except (ValueError, OSError):
            pass


def _namespace(bindings, persist, args=_MISSING):
    """The run's globals: fresh, or in a session the namespace of its earlier runs.

    Our API (tools, store, fetch, progress, ...) lives in the builtins layer under the globals,
    refreshed for every run (its tools are this run's), so a name the code defines shadows it
    and keeps its value in the next run of the session. A session keeps one builtins dict and
    refreshes it in place: functions defined in an earlier run see this run's API."""
    if persist:
        if _State.session_ns is None:
            _State.session_ns = {"__builtins__": {}}
        ns = _State.session_ns
        ns.pop(_RESULT, None)
        layer = ns.get("__builtins__")
        if not isinstance(layer, dict):  # the code replaced it: start a fresh layer
            layer = ns["__builtins__"] = {}
        layer.clear()
    else:
        layer = {}
        ns = {"__builtins__": layer}
    layer.update(builtins.__dict__)
    layer.update({
        "__cem_return__": _cem_return,
        "__cem_tail__": _tail,
        "call_mcp_tool": call_mcp_tool,
        "acall_mcp_tool": acall_mcp_tool,
        "tools": _Tools(bindings, False),
        "atools": _Tools(bindings, True),
        "list_servers": list_servers,
        "search_tools": search_tools,
        "get_tool_schema": get_tool_schema,
        "discover_mcp_tools": discover_mcp_tools,
        "store": store,
        "load": load,
        "progress": progress,
        "llm": llm,
        "fetch": fetch,
        "afetch": afetch,
        "save_skill": save_skill,
        "list_skills": list_skills,
        "skills": _Skills(False),
        "askills": _Skills(True),
        "FetchResponse": FetchResponse,
    })
    layer.update(_OUR_ERRORS)
    if args is not _MISSING:
        layer["args"] = args  # a skill's arguments
    ns["__name__"] = "__main__"
    return ns


CO_COROUTINE = 0x80  # inspect.CO_COROUTINE


def _execute(codeobj, expression, ns):
    """Runs the compiled code (`expression`: one expression, its value the result); returns
    the result value. Raises what the code raised."""
    try:
        if codeobj.co_flags & CO_COROUTINE:  # the code awaits at top level
            value = _run_async(eval(codeobj, ns))
            if expression:
                return value
        elif expression:
            return eval(codeobj, ns)
        else:
            exec(codeobj, ns)
    except _Return as r:
        return r.value
    return ns.get(_RESULT)


def _run_async(coro):
    """Runs the code's top-level coroutine on a new event loop, and ends it as asyncio.run
    does: tasks the code left running are cancelled, async generators closed. The default
    executor's threads are not waited for (the run is over): closing the loop ends the idle
    ones, and one still busy stops a session's worker (the host finds it)."""
    import asyncio

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in tasks:
                t.cancel()
            if tasks:
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _end_of_run():
    """What the code set to act later must not act in the next run of a session: its timer
    signals (alarm, setitimer) are cancelled, and the asyncio reader stops. Threads and
    processes the code left running are the host's to find (it reads /proc, which code
    cannot fake, and stops the worker)."""
    try:
        import _signal

        _signal.alarm(0)
        for which in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"):
            _signal.setitimer(getattr(_signal, which), 0)
    except Exception:  # noqa: BLE001 - a platform without them has none to cancel
        pass
    _stop_async_reader()


def _run(frame):
    limits = frame.get("limits") or {}
    _State.budget = int(limits.get("max_log_bytes") or 1024 * 1024)
    _State.truncated = False
    _State.memory_bytes = int(limits.get("memory_bytes") or 0)
    code = frame.get("code") or ""
    _State.source = code
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        _fill_linecache(linecache)
    persist = bool(frame.get("persist"))
    _State.access = frame.get("access") or {}
    _State.kept = None
    _State.seed = frame.get("seed")
    if _State.seed is not None and "random" in sys.modules:
        _seed_random(sys.modules["random"])
    ns = _namespace(frame.get("tools") or [], persist, frame["args"] if "args" in frame else _MISSING)
    first = not _State.runs
    _State.runs += 1
    saved = _limit_memory(_State.memory_bytes)
    _State.running = True
    outcome = None
    try:
        if frame.get("too_large"):
            # A run frame the memory limit could not hold (`_too_large`).
            raise MemoryError(frame["too_large"])
        codeobj, expression = _compile(code, not persist)
        if codeobj.co_flags & CO_COROUTINE and "asyncio" not in sys.modules:
            # Code that awaits at top level runs in an asyncio loop. A worker that had no time
            # to import asyncio ahead does it now, outside the memory limit, as it would have.
            _restore_memory(saved)
            try:
                import asyncio  # noqa: F401
            except Exception:  # noqa: BLE001 - running the code reports it
                pass
            if first:
                _State.idle_vm = _address_space()
            saved = _limit_memory(_State.memory_bytes)
        value = _execute(codeobj, expression, ns)
        outcome = {"status": "ok", "result": value}
    except SystemExit as e:
        if e.code is None or e.code == 0:
            outcome = {"status": "ok", "result": None}
        else:
            outcome = {"status": "err", "error": {"name": "SystemExit", "message": "exit code %s" % (e.code,)}}
    except BaseException as e:  # noqa: BLE001 - everything the code raised is reported
        # Describing it may import traceback: outside the run's memory limit, which a
        # MemoryError leaves no room under.
        _restore_memory(saved)
        saved = None
        outcome = {"status": "err", "error": _describe(e)}
    finally:
        _State.running = False
        if not persist:
            ns.clear()
        _restore_memory(saved)
    _end_of_run()
    _stdout.finish()
    _stderr.finish()
    # The very string of the reply the host kept goes back as a reference to it.
    kept, _State.kept = _State.kept, None
    if (
        kept is not None
        and outcome["status"] == "ok"
        and type(kept[1]) in (str, _Kept)
        and outcome["result"] is kept[1]
    ):
        outcome = {"status": "reply", "id": kept[0]}
    # A string result needs no conversion: `_encode` replaces a lone surrogate exactly as
    # `_clean` would, without a second pass over a large text.
    if outcome["status"] == "ok" and type(outcome["result"]) is not str:
        try:
            outcome["result"] = _jsonable(outcome["result"])
        except BaseException as e:  # noqa: BLE001
            outcome = {"status": "err", "error": _describe(e)}
    if outcome["status"] == "err":
        # Code writes an error's message (and its stack's lines): past 1 MiB each they are cut,
        # saying so, so the frame fits whatever code raised.
        error = outcome["error"]
        for key in ("message", "stack"):
            text = error.get(key)
            if text is not None and len(text) > _MAX_ERROR_TEXT:
                error[key] = "%s... (cut: %.1f MiB in all)" % (
                    text[:_MAX_ERROR_TEXT],
                    len(text.encode("utf-8", "replace")) / 2**20,
                )
    body = _encode({"type": "done", "outcome": outcome})
    if len(body) > MAX_FRAME_BYTES:
        body = _encode(
            {
                "type": "done",
                "outcome": {
                    "status": "err",
                    "error": {
                        "name": "ValueError",
                        "message": "the result is %.1f MiB as JSON; the limit is 16 MiB: "
                        "filter or summarise it in code and return less" % (len(body) / 2**20),
                    },
                },
            }
        )
    _send_bytes(body)


# What the code finds set up when it imports these modules (`_ImportHook`).
def _seed_random(module):
    """Seeds `random`'s shared generator with the run's seed (none before a run)."""
    seed = _State.seed
    if seed is not None and hasattr(module, "seed"):
        module.seed(seed)


_AFTER_IMPORT = {
    "random": _seed_random,
    "asyncio": _install_asyncio,
    "json": _install_json,
    "urllib.request": _install_urllib,
    "logging": _install_logging,
    "linecache": _fill_linecache,
}

# What a worker imported before it was ready when it imported everything up front: the
# modules of the shim's slower paths (errors, tracebacks, asyncio calls, fetch, logging) and
# the ones code uses most. A worker idle in the pool imports them (`_prefetch`), dependencies
# before what imports them, so each step is one module's own work (about 0.1-1 ms; asyncio's
# package, the longest, a few ms).
_PREFETCH = (
    "keyword", "operator", "reprlib", "collections", "types", "functools", "contextlib",
    "enum", "ast", "re", "struct", "base64", "collections.abc", "weakref", "copy", "dis",
    "token", "tokenize", "linecache", "inspect", "dataclasses", "json", "textwrap",
    "traceback", "string", "threading", "logging", "heapq", "queue", "concurrent.futures",
    "selectors", "socket", "locale", "signal", "subprocess", "contextvars", "typing",
    "asyncio",
)
# How long a worker waits for a run before it imports `_PREFETCH`. Importing ahead costs about
# as much CPU as the worker's whole start, so it is only for a worker that stays idle: one
# handed out sooner (back to back, bursts, sustained load) spends none of it, and none of it
# competes with the starts that load needs; a run that arrives during it waits for one
# module's import at most (asyncio's own package, the longest step, a few ms).
_PREFETCH_AFTER = 2.0


def _prefetch():
    """Imports `_PREFETCH` while nothing is asked of the worker: after `_PREFETCH_AFTER`
    without a frame, one module at a time, looking at the input before each, so a run that
    comes meanwhile waits for one module's import at most. True once all are imported."""
    imported = done = False
    try:
        if _inbuf or select.select([_IN], [], [], _PREFETCH_AFTER)[0]:
            return False
        for name in _PREFETCH:
            if name in sys.modules:
                continue
            if _runs or select.select([_IN], [], [], 0)[0]:
                return False
            imported = True
            try:
                __import__(name)
            except Exception:  # noqa: BLE001 - a module this interpreter does not have
                pass
        done = True
        return True
    finally:
        if imported and not _State.runs:
            # Before the first run, what is loaded now is the interpreter at rest, as when
            # it was all loaded before `ready`: the memory limit adds to it, and the
            # collector need not walk it again.
            if done:
                gc.freeze()
            _State.idle_vm = _address_space()


def _main():
    sys.addaudithook(_audit_open)
    sys.addaudithook = _no_audit_hooks
    builtins.open = io.open = _open
    # urllib.request goes through the host (which refuses it without a network grant, saying
    # how to ask), logging is captured, ...: set up when the module is imported.
    _install_hooks()
    for d in _site_dirs:
        try:
            import site

            site.addsitedir(d)
        except Exception as e:  # noqa: BLE001
            sys.__stderr__ = sys.stderr = _stderr
            os.write(2, ("cannot add site dir %s: %s\n" % (d, e)).encode())
    for name in _WARM.split(","):
        if name in _PREFETCH and name not in sys.modules:
            try:
                __import__(name)
            except Exception:  # noqa: BLE001 - a module this interpreter does not have
                pass
    # What is loaded now lives as long as the worker: the collector need not walk it again.
    gc.freeze()
    _State.idle_vm = _address_space()
    _send(
        {
            "type": "ready",
            "protocol": PROTOCOL_VERSION,
            "engine": "CPython %s" % sys.version.split()[0],
        }
    )
    prefetch = True
    while True:
        if prefetch and not _runs:
            prefetch = not _prefetch()
        _await_frames(lambda: bool(_runs), _run_waiter)
        frame = _runs.popleft()
        # Outside a session the worker ends after this run: importing ahead would be wasted.
        prefetch = prefetch and bool(frame.get("persist"))
        _run(frame)


_main()
