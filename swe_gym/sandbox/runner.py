"""The in-sandbox command runner: a standalone script, standard library only.

Every provider starts this file (``python3 runner.py --ttl N``) as a long-lived
process inside the sandbox and talks to it over its stdin/stdout (or, where the
transport has no stdin, runs it once per call: ``--request FILE`` or ``--inline BASE64``,
or keeps it as a daemon reached through FIFOs: ``--serve-fifo DIR``). A step then
costs one message round trip instead of a container-engine API call, and the
runner gives every provider the same exec semantics: each command in its own
session and process group, stdin at EOF, stdout and stderr merged in order,
output capped while streaming (head and tail kept), and the whole process group
killed on timeout or when the command returns.

Wire format, both directions: one JSON header line, then ``size`` raw bytes.
The host is the only client, one request at a time. Keep this file compatible
with Python 3.6 (old task images) and free of imports outside the stdlib.
"""

import base64
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time

PROTOCOL_VERSION = 1
_READ_CHUNK = 65536
_DRAIN_AFTER_EXIT_S = 0.25
TIMEOUT_EXIT_CODE = 124
#: Around the reply of ``--request`` (one-shot) mode.
ONE_SHOT_BEGIN = "SWE_GYM_REPLY_BEGIN"
ONE_SHOT_END = "SWE_GYM_REPLY_END"
#: Commands up to this size go to ``bash -c``; longer ones through an in-memory file.
_ARGV_LIMIT = 100000


class OutputCapture(object):
    """Keep the first and the last ``limit // 2`` bytes of a stream, count the rest.

    Memory stays bounded whatever the command prints; ``dropped`` is exact.
    """

    def __init__(self, limit):
        self.head_limit = max(0, limit) // 2
        self.tail_limit = max(0, limit) - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data):
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_limit:
            self.tail += data
            excess = len(self.tail) - self.tail_limit
            if excess > 0:
                del self.tail[:excess]

    @property
    def dropped(self):
        return self.total - len(self.head) - len(self.tail)


class FrameIO(object):
    """Header-line-plus-payload frames over two raw file descriptors."""

    def __init__(self, rfd, wfd):
        self.rfd = rfd
        self.wfd = wfd
        self.buf = bytearray()

    def _fill(self, deadline):
        timeout = None if deadline is None else max(0.0, deadline - time.time())
        ready, _, _ = select.select([self.rfd], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self.rfd, _READ_CHUNK * 4)
        if not chunk:
            raise EOFError("host closed the channel")
        self.buf += chunk
        return True

    def read(self, deadline=None):
        """Return (header, payload), or None when ``deadline`` (epoch s) passes first."""
        while b"\n" not in self.buf:
            if not self._fill(deadline):
                return None
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf = bytearray(rest)
        header = json.loads(line.decode("utf-8"))
        size = int(header.get("size", 0))
        while len(self.buf) < size:
            self._fill(None)
        payload = bytes(self.buf[:size])
        del self.buf[:size]
        return header, payload

    def write(self, header, payload=b""):
        header = dict(header, size=len(payload))
        data = json.dumps(header).encode("utf-8") + b"\n" + payload
        view = memoryview(data)
        while view:
            written = os.write(self.wfd, view)
            view = view[written:]


def _exit_code(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


class Reaper(object):
    """Reap every exited child (we may be PID 1 or a subreaper) and keep our own's status."""

    def __init__(self):
        self.statuses = {}

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.statuses[pid] = _exit_code(status)


def _kill_group(pgid, reaper):
    """SIGKILL the group until it is empty (a fork bomb keeps refilling it)."""
    for _ in range(200):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            reaper.reap()
            return
        reaper.reap()
        time.sleep(0.005)


def _shell():
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def _script_fd(command):
    """An anonymous in-memory file holding ``command`` (for huge or NUL-containing ones)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("action")
    else:  # Python < 3.8
        import tempfile

        fd, path = tempfile.mkstemp()
        os.unlink(path)
    os.write(fd, command)
    os.lseek(fd, 0, 0)
    return fd


def _spawn(command, cwd, env):
    """Start ``command`` in a new session; stdin is a pipe already at EOF (no /dev/null needed)."""
    stdin_r, stdin_w = os.pipe()
    os.close(stdin_w)
    owned = [stdin_r]
    try:
        if len(command) <= _ARGV_LIMIT and b"\0" not in command:
            argv, keep = [_shell(), "-c", command], ()
        else:
            script = _script_fd(command)
            owned.append(script)
            argv, keep = [_shell(), "/dev/fd/%d" % script], (script,)
        return subprocess.Popen(
            argv,
            stdin=stdin_r,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=keep,
        )
    finally:
        for fd in owned:
            os.close(fd)


def run_command(req, command, reaper, wake_fd):
    """Run one command; return (header, payload) of the reply."""
    limit = int(req.get("limit", 1 << 20))
    timeout = float(req.get("timeout", 60.0))
    cwd = req.get("cwd") or os.getcwd()
    env = dict(os.environ)
    env.update(req.get("env") or {})
    capture = OutputCapture(limit)
    if not os.path.isdir(cwd):
        capture.feed(("[swe_gym: working directory %s is gone; ran in /]\n" % cwd).encode())
        cwd = "/"
    start = time.time()
    deadline = start + timeout
    try:
        proc = _spawn(command, cwd, env)
    except OSError as exc:
        capture.feed(("swe_gym runner: cannot start the command: %s\n" % exc).encode())
        return {
            "ok": True,
            "exit_code": 127,
            "timed_out": False,
            "head_size": len(capture.head),
            "dropped": capture.dropped,
            "duration": time.time() - start,
        }, bytes(capture.head)
    out_fd = proc.stdout.fileno()
    watched = [out_fd, wake_fd]
    exit_code = None
    timed_out = False
    ended_at = None
    while True:
        reaper.reap()
        if ended_at is None and proc.pid in reaper.statuses:
            exit_code = reaper.statuses.pop(proc.pid)
            ended_at = time.time()
            # Background jobs die with the command; then drain what they wrote.
            _kill_group(proc.pid, reaper)
        now = time.time()
        if ended_at is None and now >= deadline:
            timed_out = True
            ended_at = now
            _kill_group(proc.pid, reaper)
        if ended_at is not None and (out_fd not in watched or now >= ended_at + _DRAIN_AFTER_EXIT_S):
            break
        wait = deadline - now if ended_at is None else ended_at + _DRAIN_AFTER_EXIT_S - now
        ready, _, _ = select.select(watched, [], [], max(0.0, wait))
        if wake_fd in ready:
            try:
                os.read(wake_fd, 4096)
            except OSError:
                pass
        if out_fd in ready:
            chunk = os.read(out_fd, _READ_CHUNK)
            if chunk:
                capture.feed(chunk)
            else:
                watched.remove(out_fd)
    _kill_group(proc.pid, reaper)
    proc.stdout.close()
    if exit_code is None:
        exit_code = reaper.statuses.pop(proc.pid, -1)
    proc.returncode = exit_code
    header = {
        "ok": True,
        "exit_code": TIMEOUT_EXIT_CODE if timed_out else exit_code,
        "timed_out": timed_out,
        "head_size": len(capture.head),
        "dropped": capture.dropped,
        "duration": time.time() - start,
    }
    return header, bytes(capture.head) + bytes(capture.tail)


def _untar(payload, dest):
    # Imported here: tarfile costs milliseconds at every start of the one-shot mode.
    import io
    import tarfile

    os.makedirs(dest, exist_ok=True)
    kwargs = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
    with tarfile.open(fileobj=io.BytesIO(payload)) as archive:
        archive.extractall(dest, **kwargs)


def handle(req, payload, reaper, wake_fd):
    op = req.get("op")
    if op == "ping":
        return {"ok": True, "pid": os.getpid(), "version": PROTOCOL_VERSION}, b""
    if op == "exec":
        return run_command(req, payload, reaper, wake_fd)
    if op == "write":
        path = req["path"]
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "wb") as handle_:
            handle_.write(payload)
        os.chmod(path, int(req.get("mode", 0o644)))
        return {"ok": True}, b""
    if op == "read":
        limit = int(req.get("max", 1 << 30))
        with open(req["path"], "rb") as handle_:
            data = handle_.read(limit + 1)
        if len(data) > limit:
            return {"ok": False, "error": "file %s is larger than %d bytes" % (req["path"], limit)}, b""
        return {"ok": True}, data
    if op == "untar":
        _untar(payload, req["path"])
        return {"ok": True}, b""
    return {"ok": False, "error": "unknown op %r" % (op,)}, b""


def _become_subreaper():
    """Orphans of our commands re-parent to us, so we can reap and kill them."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def _prepare():
    """Signals, the SIGCHLD wake-up pipe and subreaping; returns (reaper, wake fd)."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # SIGCHLD wakes the select loop through this pipe: no polling for exits.
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    _become_subreaper()
    return Reaper(), wake_r


def _safe_handle(req, payload, reaper, wake_fd):
    try:
        return handle(req, payload, reaper, wake_fd)
    except Exception as exc:
        return {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}, b""


def serve(ttl):
    """The long-lived mode: frames on stdin/stdout until EOF, ``exit`` or the TTL."""
    expires = None if ttl is None else time.time() + ttl
    reaper, wake_r = _prepare()
    io_ = FrameIO(0, 1)
    while True:
        reaper.reap()
        try:
            message = io_.read(deadline=expires)
        except EOFError:
            return 0
        if message is None:
            sys.stderr.write("swe_gym runner: time-to-live expired, exiting\n")
            return 0
        req, payload = message
        if req.get("op") == "exit":
            io_.write({"ok": True})
            return 0
        io_.write(*_safe_handle(req, payload, reaper, wake_r))


def _reply_text(reply, out):
    """A reply frame, base64-encoded between markers (text-only transports carry it intact)."""
    frame = json.dumps(dict(reply, size=len(out))).encode("utf-8") + b"\n" + out
    return ONE_SHOT_BEGIN + "\n" + base64.encodebytes(frame).decode("ascii") + ONE_SHOT_END + "\n"


def _parse_frame(data):
    line, _, rest = data.partition(b"\n")
    req = json.loads(line.decode("utf-8"))
    return req, rest[: int(req.get("size", 0))]


def serve_one(data):
    """The one-shot mode, for providers whose transport is one command per call (no stdin):
    ``data`` is one request frame; the reply goes to stdout (see `_reply_text`)."""
    req, payload = _parse_frame(data)
    reaper, wake_r = _prepare()
    sys.stdout.write(_reply_text(*_safe_handle(req, payload, reaper, wake_r)))
    sys.stdout.flush()
    return 0


def _read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, _READ_CHUNK * 4)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _write_reply(path, text):
    """Into the client's reply FIFO, if the client is still there to read it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no reader: the client gave up
        return
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        view = memoryview(text.encode("ascii"))
        while view:
            view = view[os.write(fd, view) :]
    except OSError:  # the client died while reading
        pass
    finally:
        os.close(fd)


def _exit_when_replaced(path, inode):
    """Watchdog: the daemon goes when its FIFO is removed or replaced (no orphan blocked in open())."""
    while True:
        time.sleep(1.0)
        try:
            if os.stat(path).st_ino != inode:
                os._exit(0)
        except OSError:
            os._exit(0)


def serve_fifo(directory):
    """The daemon mode for one-shot transports: no Python start per call.

    Each client writes its pid, a newline and one request frame into the FIFO
    ``directory/req`` (one client at a time) and reads the reply from its own fd 3,
    which the daemon reaches as ``/proc/PID/fd/3``. ``directory/pid`` tells clients we live.
    """
    import threading

    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    requests = os.path.join(directory, "req")
    if os.path.exists(requests):
        os.unlink(requests)
    os.mkfifo(requests, 0o600)
    watchdog = threading.Thread(target=_exit_when_replaced, args=(requests, os.stat(requests).st_ino))
    watchdog.daemon = True
    watchdog.start()
    reaper, wake_r = _prepare()
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    with open(os.path.join(directory, "pid"), "w") as handle_:
        handle_.write("%d\n" % os.getpid())
    while True:
        fd = os.open(requests, os.O_RDONLY)  # waits for the next client
        try:
            data = _read_all(fd)
        finally:
            os.close(fd)
        client, _, frame = data.partition(b"\n")
        try:
            req, payload = _parse_frame(frame)
            reply_to = "/proc/%d/fd/3" % int(client)
        except ValueError:
            continue
        if req.get("op") == "exit":
            return 0
        _write_reply(reply_to, _reply_text(*_safe_handle(req, payload, reaper, wake_r)))


def main(argv):
    args = list(argv)
    ttl = None
    while args:
        flag = args.pop(0)
        if flag == "--ttl":
            ttl = float(args.pop(0))
        elif flag == "--request":  # the frame in a file, deleted once read
            path = args.pop(0)
            with open(path, "rb") as handle_:
                data = handle_.read()
            os.unlink(path)
            return serve_one(data)
        elif flag == "--inline":  # a small frame, base64 in argv
            return serve_one(base64.b64decode(args.pop(0)))
        elif flag == "--serve-fifo":
            return serve_fifo(args.pop(0))
    return serve(ttl)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
