"""How a sandbox worker is isolated: bubblewrap namespaces, a seccomp filter, and cgroups where we are root.

Detection happens once per process. ``Isolation.describe()`` says what is on; ``Sandbox(isolation="strict")``
refuses to start when any layer is missing, ``"auto"`` degrades to rlimits with a loud warning.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field

SERVER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_server.py")
SERVER_IN_SANDBOX = "/sandbox/server.py"
ROOT_IN_SANDBOX = "/tmp"  # the whole writable tmpfs: wiped after every program

# What a program sees of the environment: nothing of the caller's (no API keys, no HF_TOKEN, ...).
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}

_CLONE_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)
_DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "pidfd_send_signal",
    "kcmp",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "personality",
    "open_by_handle_at",
    "name_to_handle_at",
)
_SIGNAL_SYSCALLS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")


class IsolationError(RuntimeError):
    """Strict isolation was asked for, and a layer is not available on this machine."""


@dataclass
class Isolation:
    bwrap: str | None
    seccomp: bool
    cgroups: bool
    problems: list[str] = field(default_factory=list)

    @property
    def full(self) -> bool:
        return self.bwrap is not None and self.seccomp

    def describe(self) -> str:
        layers = [
            "namespaces (bubblewrap: fs, net, pid, ipc, uts, user)" if self.bwrap else "NO namespaces",
            "seccomp" if self.seccomp else "NO seccomp",
            "cgroups (pids, memory)" if self.cgroups else "rlimits only",
        ]
        return ", ".join(layers)


def python_executable() -> str:
    """The real interpreter binary (not a venv symlink or a pyenv shell shim)."""
    return os.path.realpath(sys.executable)


def _python_roots() -> list[str]:
    roots = {os.path.realpath(sys.base_prefix), os.path.realpath(sysconfig.get_paths()["stdlib"])}
    exe_dir = os.path.dirname(python_executable())
    if not any(exe_dir.startswith(r + os.sep) for r in roots):
        roots.add(exe_dir)
    # Keep the shortest distinct roots only.
    out: list[str] = []
    for r in sorted(roots, key=len):
        if not any(r == o or r.startswith(o + os.sep) for o in out):
            out.append(r)
    return out


def bwrap_argv(bwrap: str, tmpfs_bytes: int) -> list[str]:
    argv = [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        "--uid",
        "65534",
        "--gid",
        "65534",
    ]
    for top in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for path in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"):
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    for root in _python_roots():
        if root.startswith("/usr/") or root == "/usr":
            continue
        argv += ["--ro-bind", root, root]
    purelib = os.path.realpath(sysconfig.get_paths(vars={"base": sys.base_prefix})["purelib"])
    if os.path.isdir(purelib):  # hide the base interpreter's site-packages
        argv += ["--tmpfs", purelib]
    argv += [
        "--ro-bind",
        SERVER_PATH,
        SERVER_IN_SANDBOX,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(tmpfs_bytes),
        "--tmpfs",
        "/tmp",
        "--chdir",
        "/tmp",
        "--clearenv",
    ]
    for k, v in SANDBOX_ENV.items():
        argv += ["--setenv", k, v]
    argv += ["--", python_executable(), "-I", "-S", "-B", SERVER_IN_SANDBOX]
    return argv


def fallback_argv() -> list[str]:
    return [python_executable(), "-I", "-S", "-B", SERVER_PATH]


@functools.lru_cache(maxsize=1)
def _bwrap_works(bwrap: str) -> str | None:
    """None when a trivial program runs inside bubblewrap with our flags, else the error text."""
    try:
        argv = bwrap_argv(bwrap, 1 << 20)
        argv = [*argv[: argv.index("--")], "--", python_executable(), "-I", "-S", "-c", "print('ok')"]
        proc = subprocess.run(argv, capture_output=True, timeout=30, env=SANDBOX_ENV)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if proc.returncode != 0 or proc.stdout.strip() != b"ok":
        return (proc.stderr or proc.stdout).decode(errors="replace").strip()[:300] or f"exit {proc.returncode}"
    return None


@functools.lru_cache(maxsize=1)
def detect() -> Isolation:
    problems = []
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        problems.append("bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
    else:
        err = _bwrap_works(bwrap)
        if err is not None:
            problems.append(f"bubblewrap cannot create namespaces here ({err})")
            bwrap = None
    seccomp = True
    try:
        build_seccomp_filter(server_pid=2, pid_namespace=True)
    except Exception as exc:  # noqa: BLE001 - any failure means: no seccomp
        seccomp = False
        problems.append(f"seccomp is unavailable ({type(exc).__name__}: {exc}); pip install pyseccomp")
    return Isolation(bwrap=bwrap, seccomp=seccomp, cgroups=_cgroup_root() is not None, problems=problems)


def build_seccomp_filter(server_pid: int, pid_namespace: bool) -> bytes:
    """A BPF program that denies what a candidate never needs and what could reach the server or host."""
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)
    for name in _DENIED_SYSCALLS:
        try:
            f.add_rule(sc.ERRNO(errno.EPERM), name)
        except Exception:  # noqa: BLE001,S112 - syscall unknown on this architecture
            continue
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # flags live in a struct seccomp cannot read; glibc falls back
    for flag in _CLONE_NS_FLAGS:
        f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.NE, 1))  # AF_UNIX only
    if pid_namespace:
        # Inside its own pid namespace the job may signal itself and its children, never init, the server,
        # or everything (-1).
        protected = {1, server_pid}
        for name in _SIGNAL_SYSCALLS:
            for pid in protected:
                for value in (pid, -pid):
                    f.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, value & 0xFFFFFFFF))
    else:
        # Without a pid namespace every process of this user is reachable: only its own group (0) may be
        # signalled.
        for name in _SIGNAL_SYSCALLS:
            f.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, 0))
    with tempfile.TemporaryFile() as tmp:
        f.export_bpf(tmp)
        tmp.seek(0)
        return tmp.read()


def _cgroup_root() -> str | None:
    """The cgroup v1 hierarchy roots we can write (root only): {'pids': path, 'memory': path}."""
    if os.geteuid() != 0:
        return None
    base = "/sys/fs/cgroup"
    for ctrl in ("pids", "memory"):
        if not os.access(os.path.join(base, ctrl, "cgroup.procs"), os.W_OK):
            return None
    return base


class WorkerCgroup:
    """A pids+memory cgroup (v1) holding one worker: bounds fork bombs and total memory, even for root."""

    def __init__(self, name: str, pids_max: int, memory_bytes: int):
        base = _cgroup_root()
        if base is None:
            raise OSError("cgroups not writable")
        self.dirs = []
        for ctrl, knob, value in (("pids", "pids.max", pids_max), ("memory", "memory.limit_in_bytes", memory_bytes)):
            d = os.path.join(base, ctrl, name)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, knob), "w") as fh:
                fh.write(str(value))
            self.dirs.append(d)

    def wrap(self, argv: list[str]) -> list[str]:
        """Prefix argv so the process enters the cgroups before it execs (no preexec_fn in a threaded host)."""
        joins = " && ".join(f"echo $$ > {d}/cgroup.procs" for d in self.dirs)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *argv]

    def remove(self) -> None:
        for d in self.dirs:
            try:
                os.rmdir(d)
            except OSError:
                pass
