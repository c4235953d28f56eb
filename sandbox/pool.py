"""The host side: a pool of isolated fork-server workers, and the public ``Sandbox`` API."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import logging
import os
import queue
import select
import struct
import subprocess
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import Future

from sandbox import isolation as iso
from sandbox.asserts import SplitTest, evaluate_verdict, split_test
from sandbox.codec import BadValue, decode
from sandbox.results import (
    CRASHED,
    ERROR,
    FAILED,
    MEMORY,
    OK,
    OUTPUT_LIMIT,
    PASSED,
    SANDBOX_ERROR,
    TIMEOUT,
    ExecResult,
    TestResult,
    TestVerdict,
)

log = logging.getLogger(__name__)
_SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
_SIGXCPU = 24
_ids = itertools.count()
_MAX_BATCH = 16


class _WorkerDied(Exception):
    pass


class _Worker:
    """One fork server in its own sandbox. Used by exactly one dispatcher thread."""

    def __init__(self, sandbox: Sandbox):
        self.sb = sandbox
        self.proc: subprocess.Popen | None = None
        self.cgroup: iso.WorkerCgroup | None = None
        self._buf = bytearray()

    def start(self) -> None:
        sb = self.sb
        if sb._iso.bwrap:
            argv = iso.bwrap_argv(sb._iso.bwrap, sb.tmpfs_mb * 1024 * 1024)
            root, in_pid_ns = iso.ROOT_IN_SANDBOX, True
        else:
            argv = iso.fallback_argv()
            root, in_pid_ns = os.path.join(sb._fallback_dir, f"w{next(_ids)}"), False
        if sb._iso.cgroups:
            try:
                self.cgroup = iso.WorkerCgroup(
                    f"rlcg-{os.getpid()}-{next(_ids)}",
                    pids_max=sb.max_processes + 8,
                    memory_bytes=(sb.memory_mb + sb.tmpfs_mb + 128) * 1024 * 1024,
                )
                argv = self.cgroup.wrap(argv)
            except OSError as exc:
                log.warning("sandbox: cgroup set-up failed (%s); relying on rlimits", exc)
                self.cgroup = None
        self._buf = bytearray()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr_log(),
            env=dict(iso.SANDBOX_ENV),
            cwd="/",
            start_new_session=True,
        )
        hello = self._recv(time.monotonic() + 60)
        bpf = None
        if sb._iso.seccomp:
            bpf = base64.b64encode(iso.build_seccomp_filter(hello["pid"], in_pid_ns)).decode()
        self._send({"op": "init", "bpf": bpf, "root": root, "pid_namespace": in_pid_ns})

    def _stderr_log(self):
        """The server writes to stderr only when it fails; keep that for the error message."""
        import tempfile

        if getattr(self, "_log", None) is None:
            self._log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        self._log.seek(0)
        self._log.truncate()
        return self._log

    def last_error(self) -> str:
        log_file = getattr(self, "_log", None)
        if log_file is None:
            return ""
        log_file.seek(0)
        return log_file.read()[-2000:].decode(errors="replace").strip()

    def stop(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            for stream in (self.proc.stdout,):
                stream.close()
            self.proc = None
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None

    def _send(self, obj) -> None:
        data = json.dumps(obj).encode("utf-8", "surrogatepass")
        try:
            self.proc.stdin.write(struct.pack(">I", len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise _WorkerDied(f"write failed: {exc}") from None

    def _recv(self, deadline: float):
        """One message; reads whatever the pipe holds at once, so a batch of replies costs few syscalls."""
        fd = self.proc.stdout.fileno()
        buf = self._buf
        while True:
            if len(buf) >= 4:
                (n,) = struct.unpack_from(">I", buf)
                if len(buf) >= 4 + n:
                    msg = bytes(buf[4 : 4 + n])
                    del buf[: 4 + n]
                    return json.loads(msg.decode("utf-8", "surrogatepass"))
            left = deadline - time.monotonic()
            if left <= 0:
                raise _WorkerDied("worker did not answer in time")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise _WorkerDied(f"worker exited (code {self.proc.poll()})")
            buf += chunk

    def execute(self, jobs: list[dict]):
        """Run a batch of jobs; yields one reply per job, in order. A worker that fails is restarted and
        the jobs it did not finish get a server error (scored by nobody as the model's fault)."""
        done = 0
        try:
            if self.proc is None or self.proc.poll() is not None:
                self.stop()
                self.start()
            self._send({"op": "jobs", "jobs": jobs})
            for job in jobs:
                reply = self._recv(time.monotonic() + job["timeout"] + 30)
                done += 1
                yield reply
        except (_WorkerDied, OSError, ValueError, KeyError, struct.error) as exc:
            detail = self.last_error()
            if detail:
                exc = f"{exc}: {detail}"
            log.warning("sandbox worker failed (%s); restarting it", exc)
            self.stop()
            for _ in jobs[done:]:
                yield {"server_error": str(exc)}


def default_workers() -> int:
    """The cores this process may use (SLURM's --cpus-per-task, taskset, ...), shared among the processes
    of this node under torchrun / accelerate (LOCAL_WORLD_SIZE), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 2
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
    return max(1, cores // max(1, local))


class Sandbox:
    """Runs untrusted Python in isolated, pre-started workers.

    >>> with Sandbox(workers=2, timeout_s=10, memory_mb=512) as sb:
    ...     sb.run("print(1 + 1)").stdout
    '2\\n'
    """

    def __init__(
        self,
        workers: int = 2,
        timeout_s: float = 10.0,
        memory_mb: int = 512,
        *,
        isolation: str = "auto",
        max_output_bytes: int = 64 * 1024,
        max_file_mb: int = 16,
        max_processes: int = 32,
        tmpfs_mb: int = 256,
        max_result_mb: int = 8,
    ):
        if isolation not in ("auto", "strict"):
            raise ValueError(f"isolation must be 'auto' or 'strict', got {isolation!r}")
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers = workers
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.max_output_bytes = int(max_output_bytes)
        self.max_file_mb = int(max_file_mb)
        self.max_processes = int(max_processes)
        self.tmpfs_mb = int(tmpfs_mb)
        self.max_result_mb = int(max_result_mb)
        self._iso = iso.detect()
        if not self._iso.full:
            msg = "sandbox isolation is degraded: " + "; ".join(self._iso.problems)
            if isolation == "strict":
                raise iso.IsolationError(msg + " (isolation='strict' refuses to run)")
            msg += (
                ". Programs still get rlimits, a scrubbed environment and a private work dir, but they can see "
                "the file system" + ("" if self._iso.seccomp else " and the network") + "."
            )
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            log.warning(msg)
        self._fallback_dir = ""
        if not self._iso.bwrap:
            import tempfile

            self._fallback_dir = tempfile.mkdtemp(prefix="rlcg-sandbox-")
        self._queue: queue.Queue = queue.Queue()
        self._workers = [_Worker(self) for _ in range(workers)]
        # Each worker is started by its own long-lived dispatcher thread: bubblewrap's --die-with-parent
        # follows the *thread* that spawned it, so a worker started from a short-lived thread dies with it.
        self._started = [threading.Event() for _ in self._workers]
        self._start_errors: list[BaseException] = []
        self._threads = [
            threading.Thread(target=self._dispatch, args=(w, ev), daemon=True, name=f"sandbox-worker-{i}")
            for i, (w, ev) in enumerate(zip(self._workers, self._started))
        ]
        self._closed = False
        for t in self._threads:
            t.start()
        for ev in self._started:
            ev.wait()
        if self._start_errors:
            self.close()
            err = self._start_errors[0]
            raise RuntimeError(f"sandbox workers failed to start: {err}") from err

    @property
    def isolation(self) -> iso.Isolation:
        return self._iso

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        for _ in self._threads:
            self._queue.put(None)  # each dispatcher stops at the first None it takes
        for t in self._threads:
            t.join(timeout=60)
        for w in self._workers:
            w.stop()
        if self._fallback_dir:
            import shutil

            shutil.rmtree(self._fallback_dir, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown
            pass

    def _dispatch(self, worker: _Worker, started: threading.Event) -> None:
        """Feed one worker: take a batch from the shared queue (so the server goes from one job straight
        to the next without waiting for us) and hand each reply to its callback as it arrives."""
        try:
            worker.start()
        except BaseException as exc:  # noqa: BLE001 - reported by __init__
            self._start_errors.append(exc)
        finally:
            started.set()
        while True:
            items = [self._queue.get()]
            limit = max(1, min(_MAX_BATCH, self._queue.qsize() // self.workers))
            while len(items) < limit:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is None for item in items)
            items = [it for it in items if it is not None]
            if items:
                delivered = 0
                try:
                    for (_, deliver), reply in zip(items, worker.execute([job for job, _ in items])):
                        delivered += 1
                        deliver(reply)
                except BaseException as exc:  # noqa: BLE001 - never leave a caller waiting
                    for _, deliver in items[delivered:]:
                        deliver({"server_error": f"{type(exc).__name__}: {exc}"})
            if stop:
                return

    def _submit(self, job: dict) -> Future:
        if self._closed:
            raise RuntimeError("Sandbox is closed")
        future: Future = Future()
        self._queue.put((job, future.set_result))
        return future

    def _run_all(self, jobs: list[dict]) -> list[dict]:
        """Submit many jobs and wait once for all of them (one wake-up, not one per job)."""
        if self._closed:
            raise RuntimeError("Sandbox is closed")
        replies: list = [None] * len(jobs)
        remaining = [len(jobs)]
        lock = threading.Lock()
        finished = threading.Event()
        if not jobs:
            return []

        def deliverer(i):
            def deliver(reply):
                replies[i] = reply
                with lock:
                    remaining[0] -= 1
                    if remaining[0] == 0:
                        finished.set()

            return deliver

        for i, job in enumerate(jobs):
            self._queue.put((job, deliverer(i)))
        finished.wait()
        return replies

    def _job(self, mode: str, code: str, timeout_s: float | None, memory_mb: int | None) -> dict:
        if not isinstance(code, str):
            raise TypeError(f"code must be str, got {type(code).__name__}")
        return {
            "op": "job",
            "mode": mode,
            "code": code,
            "timeout": float(timeout_s or self.timeout_s),
            "memory_mb": int(memory_mb or self.memory_mb),
            "file_size": self.max_file_mb * 1024 * 1024,
            "nproc": self.max_processes,
            "max_output": self.max_output_bytes,
            "max_frames_bytes": self.max_result_mb * 1024 * 1024,
        }

    # ------------------------------------------------------------------ run
    def _run_job(self, code: str, stdin: str, timeout_s, memory_mb) -> dict:
        job = self._job("run", code, timeout_s, memory_mb)
        job["stdin"] = stdin or ""
        return job

    def run(self, code: str, stdin: str = "", *, timeout_s: float | None = None, memory_mb: int | None = None):
        """Run a program; returns an ``ExecResult``."""
        job = self._run_job(code, stdin, timeout_s, memory_mb)
        return _exec_result(self._submit(job).result(), job)

    def run_many(self, codes: Sequence[str], stdins: Sequence[str] | None = None, **kw) -> list[ExecResult]:
        """Run programs in parallel; results in input order."""
        stdins = stdins if stdins is not None else [""] * len(codes)
        jobs = [self._run_job(c, s, kw.get("timeout_s"), kw.get("memory_mb")) for c, s in zip(codes, stdins)]
        return [_exec_result(reply, j) for reply, j in zip(self._run_all(jobs), jobs)]

    # ------------------------------------------------------------------ check
    def _check_job(self, code, tests, setup, entry_points, timeout_s, memory_mb):
        if isinstance(tests, str):
            raise TypeError("tests must be a list of test statements, not one string")
        eps = frozenset(entry_points or ())
        splits = [split_test(t, eps) for t in tests]
        job = self._job("check", code, timeout_s, memory_mb)
        job["setup"] = setup or ""
        job["probes"] = [p for s in splits if not s.inline for p in s.probes]
        job["inline"] = [s.source for s in splits if s.inline]
        return job, splits

    def check(
        self,
        code: str,
        tests: Sequence[str],
        setup: str = "",
        *,
        entry_points: Iterable[str] = (),
        timeout_s: float | None = None,
        memory_mb: int | None = None,
    ) -> TestResult:
        """Run ``code`` (then ``setup``), then score the assert-style ``tests``; returns a ``TestResult``."""
        job, splits = self._check_job(code, list(tests), setup, entry_points, timeout_s, memory_mb)
        return _test_result(self._submit(job).result(), job, splits)

    def check_many(self, items: Sequence[dict], **kw) -> list[TestResult]:
        """Parallel ``check``; each item has ``code``, ``tests`` and optional ``setup``/``entry_points``."""
        prepared = [
            self._check_job(
                it["code"],
                list(it["tests"]),
                it.get("setup", ""),
                it.get("entry_points", ()),
                it.get("timeout_s", kw.get("timeout_s")),
                kw.get("memory_mb"),
            )
            for it in items
        ]
        replies = self._run_all([job for job, _ in prepared])
        return [_test_result(reply, job, splits) for reply, (job, splits) in zip(replies, prepared)]

    # ------------------------------------------------------------------ async forms (TRL async rewards)
    async def arun(self, code: str, stdin: str = "", **kw) -> ExecResult:
        job = self._run_job(code, stdin, kw.get("timeout_s"), kw.get("memory_mb"))
        return _exec_result(await asyncio.wrap_future(self._submit(job)), job)

    async def arun_many(self, codes: Sequence[str], stdins: Sequence[str] | None = None, **kw) -> list[ExecResult]:
        stdins = stdins if stdins is not None else [""] * len(codes)
        return list(await asyncio.gather(*(self.arun(c, s, **kw) for c, s in zip(codes, stdins))))

    async def acheck(self, code: str, tests: Sequence[str], setup: str = "", **kw) -> TestResult:
        job, splits = self._check_job(
            code, list(tests), setup, kw.get("entry_points"), kw.get("timeout_s"), kw.get("memory_mb")
        )
        return _test_result(await asyncio.wrap_future(self._submit(job)), job, splits)

    async def acheck_many(self, items: Sequence[dict], **kw) -> list[TestResult]:
        return list(
            await asyncio.gather(
                *(
                    self.acheck(
                        it["code"],
                        it["tests"],
                        it.get("setup", ""),
                        entry_points=it.get("entry_points", ()),
                        timeout_s=it.get("timeout_s", kw.get("timeout_s")),
                        memory_mb=kw.get("memory_mb"),
                    )
                    for it in items
                )
            )
        )


# ---------------------------------------------------------------------- interpreting a worker's reply
def _frames(reply: dict) -> list[dict]:
    text = reply.get("frames", "")
    try:  # fast path: one parse for the whole stream
        frames = json.loads("[" + ",".join(text.splitlines()) + "]")
        if all(isinstance(f, dict) and isinstance(f.get("t"), str) for f in frames):
            return frames
    except ValueError:
        pass
    out = []
    for line in text.splitlines():
        try:
            frame = json.loads(line)
        except ValueError:
            continue
        if isinstance(frame, dict) and isinstance(frame.get("t"), str):
            out.append(frame)
    return out


def _base_status(reply: dict, job: dict, frames: list[dict]) -> tuple[str | None, str | None, str | None]:
    """(status, error_type, error_message) for what happened to the process, or status None if it exited."""
    if "server_error" in reply:
        return SANDBOX_ERROR, None, reply["server_error"]
    if frames and frames[0]["t"] == "setup_failed":
        return SANDBOX_ERROR, None, str(frames[0].get("msg"))[:500]
    if reply["timed_out"]:
        return TIMEOUT, None, f"exceeded the {job['timeout']:g} s time limit"
    if reply["frames_over_limit"] or max(reply["stdout_bytes"], reply["stderr_bytes"]) >= job["file_size"]:
        return OUTPUT_LIMIT, None, "output exceeded its limit"
    sig = reply["signal"]
    if sig is not None:
        if sig == _SIGXCPU:
            return TIMEOUT, None, "exceeded the CPU time limit"
        return CRASHED, None, f"killed by signal {sig}"
    return None, None, None


def _program_error(frames: list[dict]) -> tuple[str | None, str | None]:
    """The first exception the program itself raised. A syntax error counts only if it came before
    the program was compiled (so a candidate cannot relabel its runtime error)."""
    compiled = False
    for frame in frames:
        t = frame["t"]
        if t == "compiled":
            compiled = True
        elif t == "exc":
            etype = str(frame.get("type"))
            if compiled and etype in _SYNTAX_ERRORS:
                etype = "RuntimeSyntaxError"
            return etype, str(frame.get("msg"))
        elif t == "exit":
            return "SystemExit", f"exit code {frame.get('code')}"
    return None, None


def _exec_result(reply: dict, job: dict) -> ExecResult:
    frames = _frames(reply)
    status, etype, emsg = _base_status(reply, job, frames)
    result = ExecResult(
        status=status or OK,
        exit_code=reply.get("exit_code"),
        signal=reply.get("signal"),
        stdout=reply.get("stdout", ""),
        stderr=reply.get("stderr", ""),
        duration_s=round(reply.get("duration", 0.0), 6),
        stdout_truncated=reply.get("stdout_bytes", 0) > job["max_output"],
        stderr_truncated=reply.get("stderr_bytes", 0) > job["max_output"],
        error_message=emsg,
    )
    if status is None and result.exit_code != 0:
        etype, emsg = _program_error(frames)
        result.status = MEMORY if etype == "MemoryError" else ERROR
        result.error_type = etype or "NonZeroExit"
        result.error_message = emsg or f"exit code {result.exit_code}"
    return result


def _test_result(reply: dict, job: dict, splits: list[SplitTest]) -> TestResult:
    frames = _frames(reply)
    status, etype, emsg = _base_status(reply, job, frames)
    values: dict[int, tuple[bool, object]] = {}
    inline: dict[int, dict] = {}
    done = ran = False
    for frame in frames:
        t, k = frame["t"], frame.get("k")
        if t == "ran":
            ran = True
        elif t == "done":
            done = True
        elif t in ("v", "e") and type(k) is int and k not in values:
            if t == "v":
                try:
                    values[k] = (True, decode(frame.get("v")))
                except BadValue as exc:
                    values[k] = (False, ("BadValue", str(exc)))
            else:
                values[k] = (False, (str(frame.get("type")), str(frame.get("msg"))[:500]))
        elif t == "i" and type(k) is int and k not in inline:
            inline[k] = frame
    if status is None and not ran:
        etype, emsg = _program_error(frames)
        status = MEMORY if etype == "MemoryError" else ERROR
        etype = etype or "NonZeroExit"
    verdicts: list[TestVerdict] = []
    probe_base = inline_k = 0
    for split in splits:
        if split.inline:
            frame = inline.get(inline_k)
            inline_k += 1
            if frame is None:
                verdicts.append(TestVerdict(split.source, False, "NotRun", "the program ended before this test"))
            else:
                ok = frame.get("ok") is True
                verdicts.append(
                    TestVerdict(
                        split.source,
                        ok,
                        None if ok else str(frame.get("type")),
                        None if ok else str(frame.get("msg"))[:500],
                        evaluated_in_sandbox=True,
                    )
                )
            continue
        ks = range(probe_base, probe_base + len(split.probes))
        probe_base += len(split.probes)
        missing = [k for k in ks if k not in values]
        failed = [values[k][1] for k in ks if k in values and not values[k][0]]
        if missing:
            verdicts.append(TestVerdict(split.source, False, "NotRun", "the program ended before this test"))
        elif failed:
            verdicts.append(TestVerdict(split.source, False, failed[0][0], failed[0][1]))
        else:
            try:
                ok = evaluate_verdict(split, [values[k][1] for k in ks])
                verdicts.append(TestVerdict(split.source, ok, None if ok else "AssertionError", None))
            except Exception as exc:  # noqa: BLE001 - the comparison itself may raise (TypeError, ...)
                verdicts.append(TestVerdict(split.source, False, type(exc).__name__, str(exc)[:500]))
    n_pass = sum(v.passed for v in verdicts)
    if status == SANDBOX_ERROR:
        n_pass = 0
    complete = done and reply.get("exit_code") == 0 and status is None
    passed = complete and n_pass == len(verdicts)
    if status is None:
        status = PASSED if passed else FAILED
    if etype is None and not passed:
        first = next((v for v in verdicts if not v.passed), None)
        if first is not None:
            etype, emsg = first.error_type, first.error_message
        elif not complete:
            etype, emsg = "IncompleteRun", "the program did not finish the test run"
    return TestResult(
        passed=passed,
        status=status,
        tests_passed=n_pass,
        tests_total=len(verdicts),
        tests=verdicts,
        error_type=etype,
        error_message=emsg,
        stdout=reply.get("stdout", ""),
        stderr=reply.get("stderr", ""),
        duration_s=round(reply.get("duration", 0.0), 6),
    )
