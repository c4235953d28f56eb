"""Each isolation property of sandbox/, checked by running programs that try to break it.

Dangerous programs only ever run inside the sandbox, under its limits.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid

import pytest

from tests.conftest import REPO


def test_work_dir_is_fresh_empty_and_writable(sb):
    code = "import os\nprint(os.listdir('.'))\nopen('f.txt', 'w').write('x')\nprint(os.listdir('.'))"
    for _ in range(2):
        assert sb.run(code).stdout == "[]\n['f.txt']\n"


def test_files_do_not_survive_into_the_next_program(full_isolation):
    sb = full_isolation
    plant = (
        "import os\n"
        "open('/tmp/evil.py', 'w').write('PWNED = 1')\n"
        "open('/tmp/evil.pth', 'w').write('import evil')\n"
        "os.makedirs('/tmp/.io/x', exist_ok=True)\n"
        "open('planted.py', 'w').write('x = 1')\n"
        "os.chmod('.', 0o500)\n"
    )
    assert sb.run(plant).status == "ok"
    probe = "import os\nprint(sorted(os.listdir('/tmp')), os.listdir('.'))"
    for _ in range(4):  # whichever worker runs it
        out = sb.run(probe).stdout
        assert "evil" not in out and "planted" not in out and "'x'" not in out, out


def test_no_view_of_home_repo_or_datasets(full_isolation):
    from sandbox.isolation import _python_roots

    sb = full_isolation
    paths = [
        str(REPO),
        str(REPO / "sandbox"),
        str(REPO.parent / "shared"),
        str(REPO.parent / "shared" / "data"),
        "/work",
        "/home",
        "/root/.ssh",
        "/etc/passwd",
        "/etc/shadow",
        "/var",
        "/opt",
    ]
    code = f"import os\nfor p in {paths!r}:\n    print(p, os.path.exists(p))"
    out = sb.run(code).stdout
    assert out.count("False") == len(paths), out
    # The home directory shows at most the path down to the Python installation (bound read-only).
    home = os.path.expanduser("~")
    allowed = {r[len(home) + 1 :].split("/")[0] for r in _python_roots() if r.startswith(home + "/")}
    listing = sb.run(f"import os\nprint(os.listdir({home!r}) if os.path.isdir({home!r}) else [])").stdout
    assert set(eval(listing)) <= allowed, listing


def test_system_is_read_only(full_isolation):
    r = full_isolation.run("open('/usr/lib/evil', 'w')")
    assert r.status == "error" and r.error_type in ("OSError", "PermissionError")


def test_no_network_and_no_localhost_services(full_isolation):
    # A real service on the host's loopback: the sandbox must not reach it.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    hits = []
    srv.settimeout(3)

    def accept():
        try:
            conn, _ = srv.accept()
            hits.append(1)
            conn.close()
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    code = (
        "import socket\n"
        f"for addr in [('127.0.0.1', {port}), ('169.254.169.254', 80), ('8.8.8.8', 53)]:\n"
        "    try:\n"
        "        s = socket.create_connection(addr, timeout=1)\n"
        "        print('CONNECTED', addr)\n"
        "    except OSError as e:\n"
        "        print('blocked', type(e).__name__)\n"
    )
    r = full_isolation.run(code)
    t.join()
    srv.close()
    assert "CONNECTED" not in r.stdout and r.stdout.count("blocked") == 3, r.stdout + r.stderr
    assert not hits


def test_environment_is_scrubbed_including_proc_environ(full_isolation, monkeypatch):
    from sandbox import Sandbox

    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("WANDB_API_KEY", secret)
    monkeypatch.setenv("HF_TOKEN", secret)
    code = (
        "import os\n"
        "print(sorted(os.environ))\n"
        "for pid in os.listdir('/proc'):\n"
        "    if pid.isdigit():\n"
        "        try:\n"
        "            print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "        except OSError as e:\n"
        "            print(pid, type(e).__name__)\n"
    )
    with Sandbox(workers=1) as box:  # started while the secrets are in our environment
        r = box.run(code)
    assert r.status == "ok"
    assert secret not in r.stdout and "WANDB" not in r.stdout and "HF_TOKEN" not in r.stdout
    assert "/proc/1/environ" not in r.stdout  # read, and clean: the loop printed its contents
    assert "'PATH'" in r.stdout


def test_descendants_die_with_the_program(full_isolation):
    marker = f"{uuid.uuid4().hex[:12]}"
    # Double-fork daemon that execs `sleep` with a unique argument, plus an orphan and a thread.
    code = f"""
import os, threading, time
threading.Thread(target=time.sleep, args=(100,)).start()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv('/bin/sleep', ['sleep', '1000.{marker}'])
    os._exit(0)
if os.fork() == 0:
    os.execv('/bin/sleep', ['sleep', '1001.{marker}'])
time.sleep(0.3)
print('parent exits')
"""
    r = full_isolation.run(code)
    assert r.stdout == "parent exits\n", r.stderr
    time.sleep(0.2)
    alive = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        alive.append(pid)
            except OSError:
                pass
    assert not alive, f"descendants survived: {alive}"


def test_own_pid_namespace_and_non_root(full_isolation):
    code = (
        "import os\n"
        "procs = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        f"print(os.getuid(), len(procs), os.path.exists('/proc/{os.getpid()}'))"
    )
    r = full_isolation.run(code)
    uid, nprocs, host_visible = r.stdout.split()
    assert uid == "65534" and int(nprocs) <= 4 and host_visible == "False"


def test_cannot_signal_the_server_or_init(full_isolation):
    sb = full_isolation
    code = (
        "import os, signal\n"
        "for pid in (1, 2, -1, -2):\n"
        "    try:\n"
        "        os.kill(pid, signal.SIGKILL)\n"
        "        print('sent', pid)\n"
        "    except OSError as e:\n"
        "        print('denied', pid, e.errno)\n"
    )
    r = sb.run(code)
    assert "sent" not in r.stdout, r.stdout
    assert sb.run("print('still alive')").stdout == "still alive\n"


def test_seccomp_blocks_ptrace_and_inet_sockets(full_isolation):
    code = (
        "import ctypes, socket\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('ptrace', libc.ptrace(16, 2, 0, 0), ctypes.get_errno())\n"  # PTRACE_ATTACH to the server
        "try:\n"
        "    socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
        "    print('inet socket created')\n"
        "except OSError as e:\n"
        "    print('inet', e.errno)\n"
        "import os\n"
        "try:\n"
        "    os.unshare(os.CLONE_NEWUSER)\n"
        "    print('unshared')\n"
        "except (OSError, AttributeError) as e:\n"
        "    print('unshare denied')\n"
    )
    r = full_isolation.run(code)
    assert "ptrace -1 1" in r.stdout, r.stdout + r.stderr
    assert "inet 13" in r.stdout and "unshare denied" in r.stdout


def test_server_memory_is_not_readable(full_isolation):
    r = full_isolation.run("print(open('/proc/2/mem', 'rb').read(1))")
    assert r.status == "error" and r.error_type in ("PermissionError", "OSError")


def test_only_its_own_pipes_are_open(sb):
    code = "import os\nprint(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))"
    fds = eval(sb.run(code).stdout)
    # 0-2: stdio; 3: its own result pipe; the highest: the fd listdir itself opened.
    assert fds[:4] == [0, 1, 2, 3] and len(fds) <= 5, fds


def test_wall_clock_kills_c_level_loops_ignored_signals_and_sleepers(sb):
    programs = {
        "c-level regex": "import re\nre.match(r'(a*)*b', 'a' * 40)",
        "ignored signals": (
            "import signal\n"
            "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):\n"
            "    signal.signal(s, signal.SIG_IGN)\n"
            "while True:\n"
            "    pass"
        ),
        "sleeper": "import time\ntime.sleep(1000)",
        "blocked on stdin": "input()\ninput()",
    }
    start = time.monotonic()
    results = sb.run_many(list(programs.values()), stdins=["", "", "", ""], timeout_s=1)
    for name, r in zip(programs, results):
        if name == "blocked on stdin":
            assert r.status == "error" and r.error_type == "EOFError"  # stdin is a file, not a terminal
        else:
            assert r.status == "timeout", (name, r)
            assert r.duration_s < 1.5
    assert time.monotonic() - start < 10


def test_memory_limit(sb):
    r = sb.run("x = bytearray(2 * 1024 ** 3)")
    assert r.status == "memory" and r.error_type == "MemoryError"
    r = sb.run("x = []\nwhile True:\n    x.append('y' * 10 ** 6)")
    assert r.status == "memory"


def test_file_size_limit(sb):
    r = sb.run("with open('big', 'wb') as f:\n    f.write(b'x' * (64 * 1024 * 1024))")
    assert r.status == "error" and "File too large" in r.stderr


def test_printing_twenty_gigabytes_is_cut_quickly(sb):
    start = time.monotonic()
    r = sb.run("import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(20 * 1024):\n    sys.stdout.write(chunk)")
    assert r.status == "output_limit"
    assert len(r.stdout) <= sb.max_output_bytes
    assert time.monotonic() - start < 5


def test_fork_bomb_is_contained(sb):
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    r = sb.run(code, timeout_s=2)
    assert r.status in ("timeout", "error", "crashed")
    assert sb.run("print('ok')").stdout == "ok\n"


def test_thread_limit(sb):
    code = (
        "import threading, time\nn = 0\ntry:\n    for _ in range(10000):\n"
        "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n        n += 1\n"
        "except RuntimeError:\n    pass\nprint(n)"
    )
    r = sb.run(code, timeout_s=3)
    assert r.status == "ok" and int(r.stdout) < 100


@pytest.mark.parametrize("isolation", ["strict"])
def test_strict_refuses_without_isolation(monkeypatch, isolation):
    from sandbox import IsolationError, Sandbox
    from sandbox import isolation as iso

    fake = iso.Isolation(bwrap=None, seccomp=False, cgroups=False, problems=["bubblewrap is not installed"])
    monkeypatch.setattr(iso, "detect", lambda: fake)
    with pytest.raises(IsolationError, match="bubblewrap is not installed"):
        Sandbox(workers=1, isolation=isolation)


def test_fallback_runs_with_a_loud_warning(monkeypatch):
    from sandbox import Sandbox
    from sandbox import isolation as iso

    real = iso.detect()
    fake = iso.Isolation(bwrap=None, seccomp=real.seccomp, cgroups=False, problems=["bubblewrap is not installed"])
    monkeypatch.setattr(iso, "detect", lambda: fake)
    with pytest.warns(RuntimeWarning, match="isolation is degraded"), Sandbox(workers=1, timeout_s=2) as box:
        assert box.run("print(1)").stdout == "1\n"
        assert box.run("import time\ntime.sleep(5)").status == "timeout"
        t = box.check("def f():\n    return 2", ["assert f() == 2"])
        assert t.passed
        r = box.run("import os\nprint(sorted(os.environ))")
        assert "WANDB" not in r.stdout and "HOME" in r.stdout


def test_a_program_cannot_break_the_next_ones_output_files(full_isolation):
    sb = full_isolation
    sabotage = (
        "import os\n"
        "os.chmod('/tmp/.io/stdout', 0)\n"
        "os.chmod('/tmp/.io', 0o500)\n"
        "os.remove('/tmp/.io/stderr')\n"
        "os.symlink('/dev/null', '/tmp/.io/stderr')\n"
    )
    r = sb.run(sabotage)
    assert r.status in ("ok", "error"), r
    for _ in range(4):  # whichever worker ran it
        nxt = sb.run("import sys\nprint('out')\nprint('err', file=sys.stderr)")
        assert nxt.status == "ok" and nxt.stdout == "out\n" and nxt.stderr == "err\n", nxt
