"""The fork server that runs *inside* the sandbox.

This file is executed as a standalone script (``python -I -S -B _server.py``) inside bubblewrap (or, in the
degraded fallback, as a plain subprocess). It must import nothing but the standard library: it is bind-mounted
alone into the sandbox, without the repository or any site-packages.

Protocol with the trusted host (``sandbox.pool``) over two pipes, each message a 4-byte big-endian length plus
UTF-8 JSON:

    server -> host   {"hello": true, "pid": <pid>}
    host -> server   {"op": "init", "bpf": <base64 seccomp program or null>, "root": <writable dir>}
    host -> server   {"op": "job", ...}            (see ``_run_job``)
    server -> host   {"status": ..., "frames": [...], ...}

For every job the server forks one child. The child drops into a fresh work dir, applies rlimits and the
seccomp filter, runs the candidate program and, in check mode, evaluates the *probes* (the candidate's
sub-expressions of each test, chosen by the host) and writes their values as tagged JSON frames to fd 3.
The server never interprets the frames: the host decodes them strictly and decides every verdict itself.
After the child exits (or is killed at the wall-clock deadline) the server kills every remaining process it
adopted as a child subreaper and wipes the writable directory, so nothing survives into the next program.
"""

import atexit
import base64

# Modules MBPP-style programs import most; importing them once here means children pay only the fork.
import bisect  # noqa: F401
import builtins
import collections
import copy  # noqa: F401
import ctypes
import functools  # noqa: F401
import gc
import heapq  # noqa: F401
import io
import itertools
import json
import math  # noqa: F401
import operator  # noqa: F401
import os
import re  # noqa: F401
import resource
import select
import signal
import string  # noqa: F401
import struct
import sys
import time
import traceback

_HOST_IN = 10  # fds the server keeps for the host pipes; children close them
_HOST_OUT = 11
_RESULT_FD = 3
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_DUMPABLE = 4
_PR_SET_PDEATHSIG = 1
_SECCOMP_MODE_FILTER = 2

_libc = ctypes.CDLL(None, use_errno=True)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# --------------------------------------------------------------------------------------------------------
# Values: candidate results travel to the host as tagged JSON built only from exact builtin types.
# --------------------------------------------------------------------------------------------------------
_MAX_ITEMS = 200_000
_MAX_DEPTH = 64
_ITER_TYPES = tuple(
    type(x)
    for x in (
        iter(()),
        iter([]),
        iter(""),
        iter(range(0)),
        map(int, ()),
        filter(None, ()),
        zip(),
        enumerate(()),
        reversed([]),
        (i for i in ()),
        {}.keys(),
        {}.values(),
        {}.items(),
        iter({}),
        iter(set()),
        itertools.chain(),
    )
)


class Unsupported(Exception):
    pass


def encode(v, depth=0):
    """Encode a value; raises Unsupported for anything that is not plain data of exact builtin types."""
    if depth > _MAX_DEPTH:
        raise Unsupported("value nested too deeply")
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        if -(2**53) < v < 2**53:
            return v
        return ["I", format(v, "x")]
    if t is float:
        return v
    d = depth + 1
    if t is list:
        return ["L", [encode(x, d) for x in v]]
    if t is tuple:
        return ["T", [encode(x, d) for x in v]]
    if t is set:
        return ["S", [encode(x, d) for x in v]]
    if t is frozenset:
        return ["F", [encode(x, d) for x in v]]
    if t is dict:
        return ["D", [[encode(k, d), encode(x, d)] for k, x in v.items()]]
    if t is bytes:
        return ["B", base64.b64encode(v).decode()]
    if t is bytearray:
        return ["BA", base64.b64encode(bytes(v)).decode()]
    if t is complex:
        return ["C", v.real, v.imag]
    if t is range:
        return ["R", v.start, v.stop, v.step]
    if t is collections.Counter:
        return ["Counter", [[encode(k, d), encode(x, d)] for k, x in v.items()]]
    if t is collections.OrderedDict:
        return ["OD", [[encode(k, d), encode(x, d)] for k, x in v.items()]]
    if t is collections.defaultdict:
        return ["DD", [[encode(k, d), encode(x, d)] for k, x in v.items()]]
    if t is collections.deque:
        return ["DQ", [encode(x, d) for x in v]]
    # decimal and fractions are not imported by the server (a smaller image forks faster): a value of
    # their types exists only if the program imported them.
    decimal = sys.modules.get("decimal")
    if decimal is not None and t is decimal.Decimal:
        return ["Dec", str(v)]
    fractions = sys.modules.get("fractions")
    if fractions is not None and t is fractions.Fraction:
        return ["Frac", str(v.numerator), str(v.denominator)]
    if t in _ITER_TYPES:
        items = []
        for x in v:
            if len(items) >= _MAX_ITEMS:
                raise Unsupported("iterator yields too many items")
            items.append(encode(x, d))
        return ["it", items]
    # Anything else (a re.Match, a user class, a builtin subclass with its own __eq__) travels as an opaque
    # token: the parent learns its type name and truthiness, and it equals nothing but itself.
    try:
        truthy = bool(v)
    except Exception as exc:  # noqa: BLE001 - a candidate __bool__ may raise anything
        raise Unsupported("bool() of a %s raised %s" % (t.__name__, type(exc).__name__)) from None
    return ["O", str(t.__name__)[:100], truthy]


# --------------------------------------------------------------------------------------------------------
# The child: runs one candidate program.
# --------------------------------------------------------------------------------------------------------
def _write_frame(obj):
    data = (json.dumps(obj, allow_nan=True) + "\n").encode("utf-8", "surrogatepass")
    view = memoryview(data)
    while view:
        n = os.write(_RESULT_FD, view)
        view = view[n:]


def _exc_frame(kind, k, exc):
    try:
        msg = str(exc)[:1000]
    except BaseException:  # noqa: BLE001 - a candidate exception's __str__ may raise anything
        msg = "<unprintable>"
    return {"t": kind, "k": k, "type": type(exc).__name__, "msg": msg}


class _Paths:
    """The fixed layout of the writable area, as ready strings (no path joining in the child)."""

    def __init__(self, root):
        self.root = root
        self.io = os.path.join(root, ".io")
        self.work = os.path.join(root, "work")
        self.stdin = os.path.join(self.io, "stdin")
        self.stdout = os.path.join(self.io, "stdout")
        self.stderr = os.path.join(self.io, "stderr")


def _child(job, paths, in_pid_namespace, bpf, pre):
    """In the forked child: stdio, work dir, limits. Signal dispositions, the seccomp filter and the
    ``sys.std*`` objects were set up once in the server and are inherited (each step here costs
    copy-on-write page faults, so the child does as little Python as possible)."""
    try:
        os.setsid()
        os.dup2(os.open(paths.stdin if job.get("stdin") else os.devnull, os.O_RDONLY), 0)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        os.dup2(os.open(paths.stdout, flags, 0o600), 1)
        os.dup2(os.open(paths.stderr, flags, 0o600), 2)
        os.closerange(_RESULT_FD + 1, 65536)
        os.chdir(paths.work)
        if not in_pid_namespace:  # in a pid namespace the kernel kills us with the server anyway
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        mem = job["memory_mb"] * 1048576
        cpu = int(job["timeout"]) + 1
        setrlimit = resource.setrlimit
        setrlimit(resource.RLIMIT_AS, (mem, mem))
        setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        setrlimit(resource.RLIMIT_FSIZE, (job["file_size"], job["file_size"]))
        setrlimit(resource.RLIMIT_NPROC, (job["nproc"], job["nproc"]))
        if bpf is not None:
            _load_seccomp(bpf)
    except BaseException as exc:  # noqa: BLE001 - report any set-up failure as infrastructure
        try:
            _write_frame({"t": "setup_failed", "msg": repr(exc)[:500]})
        finally:
            os._exit(121)
    os._exit(_run_candidate(job, pre))


def _prepare_server_for_children():
    """Everything every child needs that does not depend on the job: done once, inherited by fork."""
    # As the python CLI does: EPIPE and EFBIG instead of death; Ctrl-C is KeyboardInterrupt.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for which, value in ((resource.RLIMIT_NOFILE, 64), (resource.RLIMIT_CORE, 0)):
        hard = resource.getrlimit(which)[1]
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (cap, cap))
    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    want = 64 * 1024 * 1024
    if hard == resource.RLIM_INFINITY or hard >= want:
        resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="replace")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace")
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
    )
    sys.argv = ["main.py"]


def _load_seccomp(bpf):
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter failed to load")


def _exit_code_of(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - output may be over its limit; that is reported elsewhere
            pass


_PRECOMPILE_LIMIT = 64 * 1024  # larger sources are compiled in the child, under its limits


def _precompile(job):
    """Compile the program, setup and probes in the server, before the fork.

    ``compile()`` runs nothing, and the server's parser is warm, where each forked child would pay for it again
    in copy-on-write faults. A syntax error is kept and raised in the child, so it is reported exactly as
    before; anything unusual (a huge source, a parser limit) leaves compiling to the child."""
    code = job["code"]
    if len(code) + len(job.get("setup") or "") + sum(map(len, job.get("probes") or ())) > _PRECOMPILE_LIMIT:
        return None
    try:
        try:
            main = compile(code, "main.py", "exec")
        except SyntaxError as exc:
            return {"syntax_error": exc}
        setup = compile(job["setup"], "setup.py", "exec") if job.get("setup") else None
        probes = []
        for src in job.get("probes") or ():
            try:
                probes.append(compile(src, "<test>", "eval"))
            except SyntaxError:
                probes.append(src)  # evaluated (and failing) in the child as before
        return {"main": main, "setup": setup, "probes": probes}
    except Exception:  # noqa: BLE001 - e.g. RecursionError/MemoryError from the parser: leave it to the child
        return None


def _run_candidate(job, pre=None):
    namespace = {"__name__": "__main__", "__builtins__": builtins, "__file__": "main.py"}
    check = job["mode"] == "check"
    try:
        if pre is not None and "syntax_error" in pre:
            raise pre["syntax_error"]
        compiled = pre["main"] if pre is not None else compile(job["code"], "main.py", "exec")
        os.write(_RESULT_FD, b'{"t": "compiled"}\n')
        exec(compiled, namespace)
        if check and job.get("setup"):
            setup = pre["setup"] if pre is not None else compile(job["setup"], "setup.py", "exec")
            exec(setup, namespace)
    except SystemExit as exc:
        code = _exit_code_of(exc)
        _write_frame({"t": "exit", "code": code})
        _flush()
        return code
    except BaseException as exc:  # noqa: BLE001 - the candidate may raise anything
        _write_frame(_exc_frame("exc", None, exc))
        try:  # print it as python would: without this harness's own frame
            tb = None if isinstance(exc, SyntaxError) else exc.__traceback__.tb_next
            traceback.print_exception(type(exc), exc, tb)
        except BaseException:  # noqa: BLE001
            pass
        _flush()
        return 1
    os.write(_RESULT_FD, b'{"t": "ran"}\n')
    if not check:
        try:
            atexit._run_exitfuncs()
        except BaseException:  # noqa: BLE001
            pass
        _flush()
        return 0
    probes = pre["probes"] if pre is not None else job["probes"]
    for k, src in enumerate(probes):
        try:
            value = eval(src, namespace)
            frame = {"t": "v", "k": k, "v": encode(value)}
        except Unsupported as exc:
            frame = {"t": "e", "k": k, "type": "UnsupportedValue", "msg": str(exc)}
        except SystemExit as exc:
            frame = {"t": "e", "k": k, "type": "SystemExit", "msg": repr(exc.code)[:200]}
        except BaseException as exc:  # noqa: BLE001
            frame = _exc_frame("e", k, exc)
        _write_frame(frame)
    for k, src in enumerate(job.get("inline") or ()):
        try:
            exec(src, namespace)
            frame = {"t": "i", "k": k, "ok": True}
        except BaseException as exc:  # noqa: BLE001
            frame = _exc_frame("i", k, exc)
            frame["ok"] = False
        _write_frame(frame)
    os.write(_RESULT_FD, b'{"t": "done"}\n')
    _flush()
    return 0


# --------------------------------------------------------------------------------------------------------
# The server: one child at a time; kill and wipe everything it leaves behind.
# --------------------------------------------------------------------------------------------------------
def _recv():
    head = _read_exact(_HOST_IN, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    return json.loads(_read_exact(_HOST_IN, n).decode("utf-8", "surrogatepass"))


def _read_exact(fd, n):
    chunks = []
    while n:
        b = os.read(fd, n)
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def _send(obj):
    data = json.dumps(obj).encode("utf-8", "surrogatepass")
    data = struct.pack(">I", len(data)) + data
    view = memoryview(data)
    while view:
        n = os.write(_HOST_OUT, view)
        view = view[n:]


_children_file = None  # /proc/<pid>/task/<pid>/children of the server, set by main()
_poller = select.poll()  # one for the server's life: fewer allocations (page faults) per program


def _adopted_children():
    """Our direct children, as bytes pids. The server is single-threaded, so one /proc file lists them all.
    (os.open/os.read: no file objects, few allocations — this runs after every program.)"""
    try:
        fd = os.open(_children_file, os.O_RDONLY)
    except OSError:
        return []
    try:
        return os.read(fd, 1 << 16).split()
    finally:
        os.close(fd)


def _sweep():
    """Kill and reap every process left from the last job. The server is their child subreaper, so once the
    job's main process is reaped every survivor is our child: an empty children list means nothing is left."""
    for _ in range(10_000):
        pids = _adopted_children()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    time.sleep(0.0005)
                    break
            except ChildProcessError:
                break


def _remove_tree(path):
    """Remove ``path`` whatever permissions or types the job left behind."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                os.chmod(path, 0o700)
            except OSError:
                pass
            for entry in os.scandir(path):
                _remove_tree(entry.path)
            os.rmdir(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def _reset_dir(path, keep=()):
    """Make ``path`` an empty private directory again (only the names in ``keep`` may stay, as files)."""
    try:
        st = os.lstat(path)
        if st.st_mode & 0o170000 != 0o040000:
            _remove_tree(path)
            os.mkdir(path, 0o700)
        elif st.st_mode & 0o7777 != 0o700:
            os.chmod(path, 0o700)
        for entry in os.scandir(path):
            if entry.name in keep and entry.is_file(follow_symlinks=False):
                continue
            _remove_tree(entry.path)
    except FileNotFoundError:
        os.mkdir(path, 0o700)


def _wipe(paths):
    """After a job: the writable area holds exactly an empty work dir and the io dir, nothing else."""
    for entry in os.scandir(paths.root):
        if entry.name not in ("work", ".io"):
            _remove_tree(entry.path)
    _reset_dir(paths.work)
    _reset_dir(paths.io)  # stdout/stderr too: a program could have changed their mode or made them links


def _read_capped(path, cap):
    try:
        size = os.stat(path).st_size
        if not size:
            return "", 0
        with open(path, "rb") as f:
            data = f.read(cap)
    except OSError:
        return "", 0
    return data.decode("utf-8", "replace"), size


def _run_job(job, paths, in_pid_namespace, bpf):
    if job.get("stdin"):
        with open(paths.stdin, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(job["stdin"])
    pre = _precompile(job)
    r, w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        if w != _RESULT_FD:
            os.dup2(w, _RESULT_FD)
            os.close(w)
        _child(job, paths, in_pid_namespace, bpf, pre)
        os._exit(121)  # not reached
    os.close(w)
    deadline = start + job["timeout"]
    cap = job["max_frames_bytes"]
    total, over, timed_out = 0, False, False
    pidfd = os.pidfd_open(pid)
    poller = _poller
    poller.register(r, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    status = None
    pipe_open = True
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        events = poller.poll(left * 1000)
        for fd, _ in events:
            if fd == r:
                chunk = os.read(r, 65536)
                if not chunk:
                    poller.unregister(r)
                    pipe_open = False
                    continue
                total += len(chunk)
                if total > cap:
                    over = True
                else:
                    buf += chunk
            elif fd == pidfd:
                _, status = os.waitpid(pid, 0)
        if over or status is not None:
            break
    if status is None:
        for kill in (os.killpg, os.kill):  # the group, and the child itself in case setsid() had not run yet
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _, status = os.waitpid(pid, 0)
    duration = time.monotonic() - start
    if pipe_open and not over:  # drain what the child wrote before it exited, without waiting for EOF
        while True:
            ready = select.select([r], [], [], 0)[0]
            if not ready:
                break
            chunk = os.read(r, 65536)
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                over = True
                break
            buf += chunk
    if pipe_open:
        poller.unregister(r)
    poller.unregister(pidfd)
    os.close(r)
    os.close(pidfd)
    _sweep()
    out, out_size = _read_capped(paths.stdout, job["max_output"])
    err, err_size = _read_capped(paths.stderr, job["max_output"])
    _wipe(paths)
    return {
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out,
        "frames_over_limit": over,
        "frames": buf.decode("utf-8", "replace"),
        "stdout": out,
        "stderr": err,
        "stdout_bytes": out_size,
        "stderr_bytes": err_size,
        "duration": duration,
    }


_WARM_UP = """
import math, re, collections
def f(xs, k=2):
    out = [x * k for x in xs if x] + list({1: 2}.items())
    return sorted(set(out), key=lambda v: str(v))
class A:
    def __init__(self):
        self.d = collections.defaultdict(list)
assert f([1, 2]) and re.match(r"a+", "aa") and math.sqrt(4) == 2.0
print("%s %d" % ("warm", 1), end="")
"""


def _warm_up():
    """Initialise the parser, compiler and the frame encoder here, once, so that children do not each pay
    for that lazy set-up in copy-on-write page faults (it was ~1 ms of a ~2 ms child)."""
    namespace = {"__name__": "__warm__", "__builtins__": builtins, "print": lambda *a, **k: None}
    exec(compile(_WARM_UP, "warm.py", "exec"), namespace)
    json.dumps([encode([1, (2.5, "x"), {3: None}, {4}, b"5"]), {"t": "v", "k": 0}], allow_nan=True)
    try:
        raise ValueError("warm")
    except ValueError as exc:
        traceback.format_exception(type(exc), exc, exc.__traceback__)
    io.TextIOWrapper(io.BytesIO(), encoding="utf-8").write("warm")


def main():
    # Keep the host pipes away from fds 0-3, which the children use.
    os.dup2(0, _HOST_IN)
    os.dup2(1, _HOST_OUT)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    global _children_file
    _children_file = "/proc/%d/task/%d/children" % (os.getpid(), os.getpid())
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # children (same uid) cannot ptrace or read our memory
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _send({"hello": True, "pid": os.getpid()})
    init = _recv()
    if init is None:
        return
    bpf = base64.b64decode(init["bpf"]) if init.get("bpf") else None
    in_pid_namespace = bool(init.get("pid_namespace"))
    paths = _Paths(init["root"])
    os.makedirs(paths.root, exist_ok=True)
    _reset_dir(paths.root)
    _wipe(paths)
    _warm_up()
    _prepare_server_for_children()
    if bpf is not None and in_pid_namespace:
        # In its pid namespace the server runs under the same filter as its children: it never needs what
        # the filter denies (it only signals its own children). Outside one, the filter forbids signalling
        # other processes, so each child loads it after the fork instead.
        _load_seccomp(bpf)
        bpf = None
    gc.collect()
    gc.freeze()  # keep the fork copy-on-write pages shared
    while True:
        batch = _recv()  # {"op": "jobs", "jobs": [...]}: results are streamed back one message per job
        if batch is None:
            return
        for job in batch["jobs"]:
            try:
                result = _run_job(job, paths, in_pid_namespace, bpf)
            except Exception as exc:  # noqa: BLE001 - report infrastructure failures, never hide them
                traceback.print_exc()  # to the worker's log; the host shows it if the worker dies
                _wipe(paths)
                result = {"server_error": "%s: %s" % (type(exc).__name__, exc)}
            _send(result)


if __name__ == "__main__":
    main()
