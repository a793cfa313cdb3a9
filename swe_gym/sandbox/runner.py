"""The in-sandbox command runner: a standalone script, standard library only.

Every provider starts this file (``python3 runner.py --ttl N``) as a long-lived
process inside the sandbox and talks to it over its stdin/stdout (or, where the
transport has no stdin, runs it once per call: ``--request FILE``, or keeps it as
a daemon reached through FIFOs: ``--serve-fifo DIR --key-file FILE``). A step then
costs one message round trip instead of a container-engine API call, and the
runner gives every provider the same exec semantics: each command in its own
session and process group, stdin at EOF, stdout and stderr merged in order,
output capped while streaming (head and tail kept), and the whole process group
killed on timeout or when the command returns.

Wire format, both directions: ``MAC JSON-header`` on one line, then ``size`` raw
bytes. The MAC is an HMAC-SHA256 under a per-sandbox key only the host and this
process know (see ``frame_mac``); every request carries a fresh random ``id`` that
its reply echoes. Commands in the sandbox (the agent, graded code) cannot forge a
reply: the runner makes itself non-dumpable before anything runs, so even a
same-uid root without CAP_SYS_PTRACE cannot open ``/proc/<runner>/fd/*``, ``mem``
or ``environ``, and anything they slip into a reply stream fails the host's check.
The host is the only client, one request at a time. Keep this file compatible
with Python 3.6 (old task images) and free of imports outside the stdlib; every
module is imported here, at start, before any command could replace its file. Apptainer hands this
source over as a shell would read it between double quotes, so it must hold no dollar sign, no backtick
and no backslash before a backslash, a double quote or a line end (``chr`` builds those where needed).
"""

import base64
import binascii
import fcntl
import hashlib
import hmac
import io
import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tarfile
import threading
import time

try:
    import ctypes
except ImportError:  # a Python built without it: no prctl, best effort
    ctypes = None
if not hasattr(os, "memfd_create"):  # Python < 3.8
    import tempfile

PROTOCOL_VERSION = 1
_READ_CHUNK = 65536
_DRAIN_AFTER_EXIT_S = 0.25
TIMEOUT_EXIT_CODE = 124
#: Around the reply of ``--request`` (one-shot) mode.
ONE_SHOT_BEGIN = "SWE_GYM_REPLY_BEGIN"
ONE_SHOT_END = "SWE_GYM_REPLY_END"
#: Commands up to this size go to ``bash -c``; longer ones through an in-memory file.
_ARGV_LIMIT = 100000
#: What each side's MAC covers first, so a request can never pass for a reply.
REQUEST_TAG = b"request"
REPLY_TAG = b"reply"
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


class BadFrame(ValueError):
    """A frame that is malformed or whose MAC does not verify."""


#: The variable holding the base64 JSON of variables passed encoded (see ``_decode_environment``).
ENCODED_ENV = "SWE_GYM_ENV_B64"


def frame_mac(key, tag, request_id, line, payload):
    """HMAC-SHA256 (hex) over direction tag, request id, header line and payload."""
    mac = hmac.new(key, tag + b"\n" + request_id.encode("utf-8") + b"\n" + line + b"\n", hashlib.sha256)
    mac.update(payload)
    return mac.hexdigest()


def encode_frame(key, tag, header, payload=b""):
    """``MAC JSON`` line plus payload; ``header`` must hold the request ``id``."""
    line = json.dumps(dict(header, size=len(payload))).encode("utf-8")
    return frame_mac(key, tag, str(header["id"]), line, payload).encode("ascii") + b" " + line + b"\n" + payload


def split_line(line):
    """(mac, header, raw header bytes) of a frame's first line (without its newline); ``BadFrame`` if malformed."""
    mac, _, raw = line.partition(b" ")
    try:
        header = json.loads(raw.decode("utf-8"))
        size = int(header["size"]) if isinstance(header, dict) else -1
    except (ValueError, KeyError, TypeError):
        raise BadFrame("unparsable frame header %r" % (line[:200],)) from None
    if len(mac) != 64 or size < 0 or not isinstance(header.get("id"), str):
        raise BadFrame("malformed frame header %r" % (line[:200],))
    header["size"] = size
    return mac, header, raw


def check_mac(key, tag, mac, header, raw, payload):
    """``BadFrame`` unless ``mac`` is the frame's true MAC."""
    expected = frame_mac(key, tag, header["id"], raw, payload).encode("ascii")
    if not hmac.compare_digest(expected, mac):
        raise BadFrame("frame MAC does not verify")


def decode_frame(key, tag, data):
    """(header, payload) of one whole frame in ``data``, verified; ``BadFrame`` otherwise (trailing bytes too)."""
    line, newline, rest = data.partition(b"\n")
    mac, header, raw = split_line(line)
    if not newline or len(rest) != header["size"]:
        raise BadFrame("frame size mismatch: header says %d, %d bytes follow" % (header["size"], len(rest)))
    check_mac(key, tag, mac, header, raw, rest)
    return header, rest


class Verifier(object):
    """Checks requests under the key and refuses a request id seen before (no replays)."""

    def __init__(self, key):
        self.key = key
        self.seen = set()

    def accept(self, mac, header, raw, payload):
        check_mac(self.key, REQUEST_TAG, mac, header, raw, payload)
        if header["id"] in self.seen:
            raise BadFrame("replayed request id %s" % header["id"])
        self.seen.add(header["id"])


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

    def replace(self, old, new):
        """Replace ``old`` by ``new`` in what is kept (the head and the tail, each on its own)."""
        for kept in (self.head, self.tail):
            before = len(kept)
            kept[:] = kept.replace(old, new)
            self.total += len(kept) - before


class FrameIO(object):
    """Authenticated frames over two raw file descriptors (the host's stream)."""

    def __init__(self, rfd, wfd):
        self.rfd = rfd
        self.wfd = wfd
        self.buf = bytearray()
        self.key = None
        self.verifier = None

    def absorb(self):
        """Read what is there (select said readable); ``EOFError`` when the host closed the channel."""
        chunk = os.read(self.rfd, _READ_CHUNK * 4)
        if not chunk:
            raise EOFError("host closed the channel")
        self.buf += chunk

    def _fill(self, deadline):
        timeout = None if deadline is None else max(0.0, deadline - time.time())
        ready, _, _ = select.select([self.rfd], [], [], timeout)
        if not ready:
            return False
        self.absorb()
        return True

    def _line(self, deadline):
        while b"\n" not in self.buf:
            if not self._fill(deadline):
                return None
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf = bytearray(rest)
        return line

    def handshake(self, deadline=None):
        """The first line the host sends is the key (hex); False if ``deadline`` passes first."""
        line = self._line(deadline)
        if line is None:
            return False
        self.key = binascii.unhexlify(line.strip())
        self.verifier = Verifier(self.key)
        return True

    def read(self, deadline=None):
        """Return (header, payload) of a verified request, or None when ``deadline`` (epoch s) passes first."""
        line = self._line(deadline)
        if line is None:
            return None
        mac, header, raw = split_line(line)
        size = header["size"]
        while len(self.buf) < size:
            self._fill(None)
        payload = bytes(self.buf[:size])
        del self.buf[:size]
        self.verifier.accept(mac, header, raw, payload)
        return header, payload

    def write(self, request, header, payload=b""):
        """The reply to ``request``, MAC'd and echoing its id."""
        view = memoryview(encode_frame(self.key, REPLY_TAG, dict(header, id=request["id"]), payload))
        while view:
            written = os.write(self.wfd, view)
            view = view[written:]


def _exit_code(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


#: The processes the runner started itself (each command's shell, the spare, the persistent shell): any other
#: child it reaps or finds is an orphan of some command's tree, re-parented to it.
OWN = set()


class Reaper(object):
    """Reap every exited child (we may be PID 1 or a subreaper), keep our own's status, count the orphans."""

    def __init__(self):
        self.statuses = {}
        self.orphans = 0

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in OWN:
                OWN.discard(pid)
                self.statuses[pid] = _exit_code(status)
            else:
                self.orphans += 1


def _orphans_alive():
    """The live processes re-parented to us that we did not start (from /proc)."""
    found = []
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) in OWN:
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if fields[0] not in (b"Z", b"X") and int(fields[1]) == me:
                found.append(int(name))
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
    return found


def _end_orphans(reaper):
    """SIGKILL every live orphan (each stopped first, so none forks meanwhile) until none is left."""
    for _ in range(200):
        alive = _orphans_alive()
        if not alive:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in alive:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        time.sleep(0.002)
        reaper.reap()


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
        fd, path = tempfile.mkstemp()
        os.unlink(path)
    os.write(fd, command)
    os.lseek(fd, 0, 0)
    return fd


def _popen(argv, cwd, env, keep=()):
    """Start ``argv`` in a new session, output merged into one pipe, ``keep`` passed on; stdin is a pipe already
    at EOF (no /dev/null needed)."""
    stdin_r, stdin_w = os.pipe()
    os.close(stdin_w)
    try:
        proc = subprocess.Popen(
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
        os.close(stdin_r)
    OWN.add(proc.pid)
    return proc


def _spawn(command, cwd, env):
    """Start ``command`` in a fresh shell (``_popen``): as ``-c`` its argument, or when too large or holding a NUL
    from an in-memory file."""
    if len(command) <= _ARGV_LIMIT and b"\0" not in command:
        return _popen([_shell(), "-c", command], cwd, env)
    script = _script_fd(command)
    try:
        return _popen([_shell(), "/dev/fd/%d" % script], cwd, env, (script,))
    finally:
        os.close(script)


def _wait(watched, timeout, wake_fd, host, host_gone):
    """The fds of ``watched`` that are readable within ``timeout`` s, the SIGCHLD wake-up pipe drained and the
    host's channel read; when the host closed it: ``host_gone()``, then ``EOFError`` (the sandbox goes with it)."""
    ready, _, _ = select.select(watched, [], [], max(0.0, timeout))
    if wake_fd in ready:
        try:
            os.read(wake_fd, 4096)
        except OSError:
            pass
    if host is not None and host.rfd in ready:
        try:
            host.absorb()
        except EOFError:
            host_gone()
            raise
    return ready


#: Bytes from which no syntax error can be made, save with a reserved word (``_parses``).
_PLAIN_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 " + b"_./=:,+%@~-")
_RESERVED = frozenset(b"if then else elif fi case esac for select while until do done in function time coproc".split())


def _parses(command):
    """Whether ``command`` is known to parse without asking bash: plain words on lines (no quote, operator,
    expansion or bracket), none of them a reserved word. ``true``, ``ls -la src``, ``python -m pytest tests/x.py``."""
    return set(command.replace(b"\n", b" ")) <= _PLAIN_BYTES and not _RESERVED.intersection(command.split())


def _shell_text(text):
    """Shell code written with ``@`` for a dollar sign and ``^`` for a double quote (this file may hold
    neither where a shell would expand it: see the module docstring)."""
    return text.replace("@", chr(36)).replace("^", chr(34))


def _identity(path):
    """The device and inode ``path`` leads to (None where it leads nowhere)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


_BASE_ENV = []


def _base_env():
    """The environment every command starts from (ours, decoded at start-up, never changed after)."""
    if not _BASE_ENV:
        _BASE_ENV.append(dict(os.environ))
    return _BASE_ENV[0]


class SpareShell(object):
    """A ``bash`` started ahead of the agent's next command, blocked reading it: a step then pays no bash start-up
    (on a small machine most of a step's time), only the command's own.

    Started after the reply to an agent's command (``exec`` with ``spare``), in that command's cwd and environment.
    The next such command in the same cwd (the same directory still: one removed and made anew starts fresh) and
    environment goes to it through an in-memory file; any other starts a fresh ``bash -c`` as before. It runs the
    command as ``bash -c`` would, in its own session: the parameters ``0`` and ``_``, ``SECONDS``, ``SHLVL`` and
    ``BASH_EXECUTION_STRING`` as there, none of its own variables left. Unless it is plain words (``_parses``), a
    subshell first parses the whole command under ``set -n`` (nothing in it runs, whatever it holds); one that does
    not parse is handed to a fresh ``bash -c`` by ``exec`` (same pid), so a syntax error reads exactly as
    ``bash -c`` writes it. What still tells them apart is shell introspection only: ``declare -p`` lists
    ``PIPESTATUS`` (and ``SECONDS`` with a value) before the command's first pipeline.
    The env's own commands never come here: a process the agent left behind could reach the spare's descriptors.
    """

    def __init__(self):
        self.proc = None
        self.key = None
        self.wanted = None  # (cwd, env) of the next spare, started by ``refill`` once the reply is out

    def refill(self, reaper):
        if self.wanted is not None:
            cwd, env, extra = self.wanted
            self.wanted = None
            self.start(cwd, env, extra, reaper)

    @staticmethod
    def usable(command, env):
        """Whether ``command`` can go to a spare: bash present, no NUL, an argv's size, no start-up file to read."""
        return (
            os.path.exists(_BASH)
            and len(command) <= _ARGV_LIMIT
            and b"\0" not in command
            and not env.get("BASH_ENV")
            and not env.get("ENV")
        )

    def start(self, cwd, env, extra, reaper):
        """Start the spare for commands in ``cwd`` with ``env`` (the base environment plus ``extra``; best effort:
        none when it cannot start)."""
        self.close(reaper)
        go_r, go_w = os.pipe()
        script = _script_fd(b"")
        boot = _shell_text(
            "__swe_gym_u=@_; read -r -d '' -u %(go)d __swe_gym_c; IFS= read -r -d '' -u %(script)d __swe_gym_c; "
            "exec %(go)d<&- %(script)d<&-; SECONDS=0; __swe_gym_k=@{__swe_gym_c:0:1}; __swe_gym_c=@{__swe_gym_c:1}; "
            "if [[ @__swe_gym_k == 0 ]] || ( eval ^set -n^@'%(nl)s'^@__swe_gym_c^ ) >/dev/null 2>&1; then "
            "BASH_EXECUTION_STRING=@__swe_gym_c; printf -v __swe_gym_q %%q ^@__swe_gym_u^; "
            "eval ^unset -v __swe_gym_c __swe_gym_u __swe_gym_q __swe_gym_k; : @__swe_gym_q; @__swe_gym_c^; "
            "else export SHLVL=@((SHLVL-1)); exec %(bash)s -c ^@__swe_gym_c^; fi"
        ) % {"go": go_r, "script": script, "nl": chr(92) + "n", "bash": _BASH}
        try:
            # It starts in the very directory we opened (through its descriptor, which it does not keep): its
            # identity is known without asking /proc while it execs (which waits for the exec to finish).
            where = os.open(cwd, getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)
        except OSError:
            os.close(go_r)
            os.close(go_w)
            os.close(script)
            return
        try:
            stat = os.fstat(where)
            identity = (stat.st_dev, stat.st_ino)
            proc = _popen([_BASH, "-c", boot], "/proc/self/fd/%d" % where, env, (go_r, script))
        except OSError:
            os.close(go_w)
            os.close(script)
            return
        finally:
            os.close(go_r)
            os.close(where)
        self.proc, self.go, self.script = proc, go_w, script
        self.key = (cwd, sorted(extra.items()), identity)

    def take(self, command, cwd, extra, reaper):
        """The spare, now running ``command``, when it waits in ``cwd`` with the same ``extra`` environment; else
        None (and it is gone). The same ``cwd``: the path still leads to the directory the spare works in; one
        removed and made anew, or swapped, starts fresh."""
        if self.proc is None:
            return None
        proc, key = self.proc, self.key
        reaper.reap()
        if proc.pid in reaper.statuses or key != (cwd, sorted(extra.items()), _identity(cwd)):
            self.close(reaper)
            return None
        try:
            checked = b"0" if _parses(command) else b"1"  # 1: the spare parses it first
            os.pwrite(self.script, checked + command + b"\0", 0)
            os.write(self.go, b"\0")
        except OSError:  # it died meanwhile
            self.close(reaper)
            return None
        os.close(self.go)
        os.close(self.script)
        self.proc = None
        return proc

    def close(self, reaper):
        """Kill the spare, if any (its whole session's group)."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        os.close(self.go)
        os.close(self.script)
        _kill_group(proc.pid, reaper)
        reaper.statuses.pop(proc.pid, None)
        proc.stdout.close()


def run_command(req, command, reaper, wake_fd, host):
    """Run one command; return (header, payload) of the reply.

    ``host`` (a ``FrameIO``, or None) is watched meanwhile: when the host's end of the channel
    closes (its process was killed), the command's group is killed and ``EOFError`` raised,
    so the sandbox goes with its owner instead of at the step's end.
    """
    limit = int(req.get("limit", 1 << 20))
    timeout = float(req.get("timeout", 60.0))
    cwd = req.get("cwd") or os.getcwd()
    extra = req.get("env") or {}
    env = dict(_base_env())
    env.update(extra)
    capture = OutputCapture(limit)
    if not os.path.isdir(cwd):
        capture.feed(("[swe_gym: working directory %s is gone; ran in /]\n" % cwd).encode())
        cwd = "/"
    spare = bool(req.get("spare")) and cwd == req.get("cwd") and SpareShell.usable(command, env)
    orphans = reaper.orphans
    start = time.time()
    deadline = start + timeout
    try:
        proc = SPARE.take(command, cwd, extra, reaper) if spare else None
        if proc is None:
            proc = _spawn(command, cwd, env)
        if spare:
            SPARE.wanted = (cwd, env, extra)
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
    watched = [out_fd, wake_fd] + ([host.rfd] if host is not None else [])
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
        ready = _wait(watched, wait, wake_fd, host, lambda: _kill_group(proc.pid, reaper))
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
    if req.get("orphans"):  # what outlived its parent in the command's tree, counted; the live ones ended
        _end_orphans(reaper)
        header["orphans"] = reaper.orphans - orphans
    return header, bytes(capture.head) + bytes(capture.tail)


#: The persistent shell's own descriptors sit at or above this number, out of the way of the agent's
#: (``exec 3>file``) and of bash's (10 up, for saved redirections; 255, its script).
_SHELL_FD_BASE = 200
_BASH = "/bin/bash"


def _high_fd(fd):
    """``fd`` moved to a number at or above ``_SHELL_FD_BASE``, or left where it is under a lower fd limit."""
    try:
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD, _SHELL_FD_BASE)
    except OSError:
        return fd
    os.close(fd)
    return moved


def _group_members(pgid, keep):
    """The live processes of process group ``pgid`` other than ``keep`` (from /proc)."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == keep:
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid:
                found.append(int(name))
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
    return found


def _sweep(pgid, keep, reaper):
    """SIGKILL what a command left in the shell's process group (background jobs), sparing the shell ``keep``.

    The whole group, the idle shell included, is stopped first, so nothing in it can fork meanwhile.
    """
    if not _group_members(pgid, keep):
        return
    try:
        os.killpg(pgid, signal.SIGSTOP)
    except OSError:
        pass
    try:
        for _ in range(200):
            members = _group_members(pgid, keep)
            if not members:
                return
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            reaper.reap()
    finally:
        try:
            os.kill(keep, signal.SIGCONT)
        except OSError:
            pass


def _drain(fd, capture, wait):
    """Feed what ``fd`` holds to ``capture``: until EOF or ``wait`` seconds pass (0: what is there now)."""
    until = time.time() + wait
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, until - time.time()))
        if not ready:
            return
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            return
        capture.feed(chunk)


class PersistentShell(object):
    """The ``shell`` op: commands run one after another in one bash, started on first use, so ``cd``,
    ``export``, functions and activated virtualenvs carry over from one command to the next.

    Each command keeps the guarantees of ``exec``: stdin at EOF, stdout and stderr merged into the same
    capped capture, the environment ``exec`` gets (pagers off), and the processes it leaves in the shell's
    process group (background jobs) killed when it ends. The command is written to a file that the shell
    sources, its redirections re-made for every command (so an ``exec >log`` lasts one command), then
    the shell writes a fresh random nonce and the exit status to a status pipe of its own. The end of a
    command is that line with its own nonce, on a pipe the command's output never goes to (its stdout and
    stderr are another pipe, and it runs with the status pipe closed): nothing it prints can end it early,
    and a stray status line (of an earlier command) names another nonce and is ignored.

    On timeout the shell is killed with the command's whole process group (its state may be mid-command);
    a command that ends the shell (``exit``, ``exec``, a signal) ends with it. Either way the reply says
    so, and the next command gets a new shell whose first output line says why.
    """

    def __init__(self):
        self.proc = None
        self.lost = None  # why the last shell ended, for the next one's first line
        self.home = None  # the private directory holding the command file

    def alive(self, reaper):
        if self.proc is None:
            return False
        reaper.reap()
        if self.proc.pid in reaper.statuses:  # it ended between two commands
            code = self.proc.returncode = reaper.statuses.pop(self.proc.pid)
            self.close(reaper)
            self.lost = "the previous one ended with exit code %d" % code
            return False
        return True

    def _start(self, cwd, capture):
        if not os.path.isdir(cwd):
            capture.feed(("[swe_gym: working directory %s is gone; the shell starts in /]\n" % cwd).encode())
            cwd = "/"
        ctl_r, ctl_w = os.pipe()
        status_r, status_w = os.pipe()
        out_r, out_w = os.pipe()
        eof_r, eof_w = os.pipe()
        os.close(eof_w)
        status_w, out_w, eof_r = _high_fd(status_w), _high_fd(out_w), _high_fd(eof_r)
        try:
            null = os.open(os.devnull, os.O_RDWR)
        except OSError:  # no /dev/null: the shell's own messages (outside commands) go to the capture
            null = os.dup(out_w)
        try:
            proc = subprocess.Popen(
                [_BASH, "-s"],
                stdin=ctl_r,
                stdout=null,
                stderr=null,
                cwd=cwd,
                env=dict(os.environ),
                start_new_session=True,
                pass_fds=(status_w, out_w, eof_r),
            )
        except OSError:
            for fd in (ctl_r, ctl_w, status_r, out_r):
                os.close(fd)
            raise
        finally:
            for fd in (status_w, out_w, eof_r, null):
                os.close(fd)
        OWN.add(proc.pid)
        # We keep the read end of its script pipe too: writing to a shell that died never raises SIGPIPE.
        self.proc, self.ctl, self.ctl_keep, self.status, self.out = proc, ctl_w, ctl_r, status_r, out_r
        # Sourced with stdin at EOF, output to the capture and none of our descriptors; then the status line;
        # then its background jobs (which we kill) are forgotten, so no "Killed" notice lands in the next output.
        redirect = "<&%d >&%d 2>&1 %d>&- %d>&- %d<&-" % (eof_r, out_w, status_w, out_w, eof_r)
        status = '; builtin echo %s "' + chr(36) + '?" >&' + str(status_w)  # chr(36): see the module docstring
        self.wrapper = "builtin . %s " + redirect + status + "; builtin disown -a\n"

    def _script(self, command):
        """The command in a fresh file of our private directory (made anew if a command removed it)."""
        for _ in range(2):
            if self.home is None or not os.path.isdir(self.home):
                self.home = self._make_home()
            path = os.path.join(self.home, "command")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            except OSError:
                self.home = None
                continue
            try:
                view = memoryview(command)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            return path
        raise OSError("cannot write the command file")

    @staticmethod
    def _make_home():
        name = "swe_gym-shell-%s" % binascii.hexlify(os.urandom(6)).decode()
        for base in (os.environ.get("TMPDIR"), "/tmp", "/dev/shm", "/var/tmp", os.getcwd()):
            if base:
                try:
                    os.mkdir(os.path.join(base, name), 0o700)
                    return os.path.join(base, name)
                except OSError:
                    continue
        raise OSError("no writable temporary directory for the command file")

    def run(self, req, command, reaper, wake_fd, host):
        """Run one command in the shell; (header, payload) of the reply, as ``run_command`` gives."""
        if not os.path.exists(_BASH):
            return {"ok": False, "error": "the persistent shell needs %s, which this sandbox lacks" % _BASH}, b""
        capture = OutputCapture(int(req.get("limit", 1 << 20)))
        start = time.time()
        deadline = start + float(req.get("timeout", 60.0))
        new = not self.alive(reaper)
        try:
            if new:
                cwd = req.get("cwd") or os.getcwd()
                reason = self.lost or ("the previous one is not running here any more" if req.get("expect") else None)
                self.lost = None
                if reason:
                    capture.feed(
                        (
                            "[swe_gym: new shell (%s): back in %s with the initial environment; earlier cd, "
                            "export and activated environments are gone]\n" % (reason, cwd)
                        ).encode()
                    )
                self._start(cwd, capture)
            path = self._script(command)
        except OSError as exc:
            capture.feed(("swe_gym runner: cannot start the command: %s\n" % exc).encode())
            return self._reply(capture, 127, False, start, new), bytes(capture.head)
        nonce = binascii.hexlify(os.urandom(16)).decode()
        quoted = "'%s'" % path.replace("'", "'" + chr(92) + "''")  # chr(92): see the module docstring
        os.write(self.ctl, (self.wrapper % (quoted, nonce)).encode())
        pid = self.proc.pid
        watched = [self.out, self.status, wake_fd] + ([host.rfd] if host is not None else [])
        pending = b""
        exit_code = ended = None
        timed_out = False
        while exit_code is None:
            reaper.reap()
            if pid in reaper.statuses:
                ended = self.proc.returncode = reaper.statuses.pop(pid)
                break
            now = time.time()
            if now >= deadline:
                timed_out = True
                break
            ready = _wait(watched, deadline - now, wake_fd, host, lambda: self.close(reaper))
            if self.out in ready:
                chunk = os.read(self.out, _READ_CHUNK)
                if chunk:
                    capture.feed(chunk)
                else:
                    watched.remove(self.out)
            if self.status in ready:
                chunk = os.read(self.status, 4096)
                if not chunk:  # the shell closed it: it exec'd another program (or is dying)
                    watched.remove(self.status)
                pending += chunk
                lines = pending.split(b"\n")
                pending = lines.pop()[-4096:]
                for line in lines:
                    mark, _, code = line.decode("ascii", "replace").partition(" ")
                    if mark == nonce and code.strip().isdigit():
                        exit_code = int(code)
        try:
            os.unlink(path)
        except OSError:
            pass
        # bash names the sourced file in its errors ("PATH: line 1: x: command not found"): name bash, as a
        # stateless action's errors do, not where our command file lives.
        capture.replace(path.encode() + b": ", _BASH.encode() + b": ")
        if exit_code is not None:
            _sweep(pid, pid, reaper)
            _drain(self.out, capture, 0.0)
            return self._reply(capture, exit_code, False, start, new), bytes(capture.head) + bytes(capture.tail)
        _kill_group(pid, reaper)  # the shell (unless it ended) and everything in its group
        _drain(self.out, capture, _DRAIN_AFTER_EXIT_S)
        self.close(reaper)
        if timed_out:
            self.lost = "the previous one was killed with its command when it timed out"
            note, exit_code = "the shell was killed with the timed-out command", TIMEOUT_EXIT_CODE
        else:
            self.lost = "the previous one ended with exit code %d" % ended
            note, exit_code = "the shell ended (exit code %d)" % ended, ended
        ends_line = bytes(capture.tail[-1:] or capture.head[-1:]) in (b"", b"\n")
        capture.feed(
            ("%s[swe_gym: %s; the next command gets a new shell]\n" % ("" if ends_line else "\n", note)).encode()
        )
        return self._reply(capture, exit_code, timed_out, start, new), bytes(capture.head) + bytes(capture.tail)

    def _reply(self, capture, exit_code, timed_out, start, new):
        return {
            "ok": True,
            "exit_code": exit_code,
            "timed_out": timed_out,
            "head_size": len(capture.head),
            "dropped": capture.dropped,
            "duration": time.time() - start,
            "shell_alive": self.proc is not None,
            "new_shell": new,
        }

    def close(self, reaper):
        """Kill the shell (and its process group) and forget it; idempotent."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.returncode is None:  # not reaped yet: its pid (the group's id) cannot be anyone else's
            _kill_group(proc.pid, reaper)
            proc.returncode = reaper.statuses.pop(proc.pid, -1)
        for fd in (self.ctl, self.ctl_keep, self.status, self.out):
            os.close(fd)

    def remove_home(self):
        if self.home is not None:
            try:
                for name in os.listdir(self.home):
                    os.unlink(os.path.join(self.home, name))
                os.rmdir(self.home)
            except OSError:
                pass
            self.home = None


#: The runner's one persistent shell (see ``PersistentShell``).
SHELL = PersistentShell()
SPARE = SpareShell()


#: How a gzip, bzip2 or xz stream begins.
_COMPRESSED = (bytes([0x1F, 0x8B]), b"BZh", bytes([0xFD]) + b"7zXZ")


def _open_tar(payload):
    """The archive in ``payload``: a plain one opened as such (detection would first import, and try, every
    compression module: milliseconds in a fresh runner, which a fork into the pool's sandboxes pays in each)."""
    plain = not payload.startswith(_COMPRESSED)
    return tarfile.open(fileobj=io.BytesIO(payload), mode="r:" if plain else "r:*")


def _untar(payload, dest):
    os.makedirs(dest, exist_ok=True)
    kwargs = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
    with _open_tar(payload) as archive:
        archive.extractall(dest, **kwargs)


def _remove(path):
    """Whatever is at ``path`` goes (a directory with its contents; a symlink itself, never its target)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def _apply_delta(payload, root, remove, clear, touch):
    """A fork's changes, copied into this sandbox (see ``PoolForker`` on the host).

    ``remove``: paths the source deleted; ``clear``: directories it emptied and filled anew (only the tar's
    entries stay in them). Then each entry of the tar replaces whatever is at its path (never written through a
    symlink there), with its numeric owner, mode and times as they are: the host built the tar from the source's
    writable layer, so nothing is filtered out. ``touch``: files whose bytes are the image's, given their
    (path, mode, uid, gid, mtime); each must be here as a regular file (else the fork is made the usual way).
    """
    for path in remove:
        _remove(os.path.join(root, path))
    for path in clear:
        directory = os.path.join(root, path)
        for name in os.listdir(directory) if os.path.isdir(directory) else ():
            _remove(os.path.join(directory, name))
    kwargs = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
    with _open_tar(payload) as archive:
        members = archive.getmembers()
        for member in members:
            target = os.path.join(root, member.name)
            a_directory = os.path.isdir(target) and not os.path.islink(target)
            if os.path.lexists(target) and not (member.isdir() and a_directory):
                _remove(target)
        archive.extractall(root, members, numeric_owner=True, **kwargs)
    for path, mode, uid, gid, mtime in touch:
        target = os.path.join(root, path)
        if os.path.islink(target) or not os.path.isfile(target):
            raise OSError("%s is not the image's file here" % target)
        if os.geteuid() == 0:
            os.chown(target, uid, gid)
        os.chmod(target, mode)
        os.utime(target, (mtime, mtime))


def _regular_file(path, flags):
    """``path`` opened as a file object if it is a regular file (or, writing, none yet); OSError otherwise.

    Opened without blocking first: a FIFO or device that code in the sandbox put at a path the host reads or
    writes (a reward file, a listing, what an editor views) would otherwise hang the runner, and with it the
    channel, until the call's timeout declares the sandbox dead.
    """
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("%s is not a regular file" % path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "wb" if flags & os.O_WRONLY else "rb")
    except BaseException:
        os.close(fd)
        raise


def handle(req, payload, reaper, wake_fd, host=None):
    op = req.get("op")
    if op == "ping":
        return {"ok": True, "pid": os.getpid(), "version": PROTOCOL_VERSION}, b""
    if op == "exec":
        return run_command(req, payload, reaper, wake_fd, host)
    if op == "shell":
        return SHELL.run(req, payload, reaper, wake_fd, host)
    if op == "write":
        path = req["path"]
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with _regular_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) as handle_:
            handle_.write(payload)
        os.chmod(path, int(req.get("mode", 0o644)))
        return {"ok": True}, b""
    if op == "read":
        limit = int(req.get("max", 1 << 30))
        with _regular_file(req["path"], os.O_RDONLY) as handle_:
            data = handle_.read(limit + 1)
        if len(data) > limit:
            return {"ok": False, "error": "file %s is larger than %d bytes" % (req["path"], limit)}, b""
        return {"ok": True}, data
    if op == "untar":
        _untar(payload, req["path"])
        return {"ok": True}, b""
    if op == "delta":
        _apply_delta(payload, req["path"], req.get("remove", []), req.get("clear", []), req.get("touch", []))
        return {"ok": True}, b""
    return {"ok": False, "error": "unknown op %r" % (op,)}, b""


def _prctl(option, value):
    """Best effort: a libc without prctl (or a Python without ctypes) leaves it undone."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except Exception:
        pass


def _become_subreaper():
    """Orphans of our commands re-parent to us, so we can reap and kill them."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


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


def _end_shell(reaper):
    """As the runner goes: its persistent shell (if any), the shell's command directory and the spare go too."""
    SHELL.close(reaper)
    SPARE.close(reaper)
    SHELL.remove_home()


def _safe_handle(req, payload, reaper, wake_fd, host=None):
    try:
        return handle(req, payload, reaper, wake_fd, host)
    except EOFError:
        raise
    except Exception as exc:
        return {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}, b""


def _connected(path):
    """The descriptor of a stream connected to the host's listening socket at ``path`` (``--connect``): a local
    engine's channel that skips the engine's own stream copying. Not inherited by commands (close-on-exec)."""
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    channel.connect(path)
    return channel.detach()


def serve(ttl, connect=None):
    """The long-lived mode: the key, then frames on stdin/stdout (or the socket at ``connect``) until EOF, ``exit``
    or the TTL."""
    expires = None if ttl is None else time.time() + ttl
    reaper, wake_r = _prepare()
    fd = _connected(connect) if connect else None
    io_ = FrameIO(0, 1) if fd is None else FrameIO(fd, fd)
    try:
        if not io_.handshake(deadline=expires):
            return 0
        while True:
            reaper.reap()
            message = io_.read(deadline=expires)
            if message is None:
                sys.stderr.write("swe_gym runner: time-to-live expired, exiting\n")
                return 0
            req, payload = message
            if req.get("op") == "exit":
                io_.write(req, {"ok": True})
                return 0
            io_.write(req, *_safe_handle(req, payload, reaper, wake_r, io_))
            SPARE.refill(reaper)
    except EOFError:
        return 0
    except ValueError as exc:  # a BadFrame, say: only the host writes here, so never guess; stop
        sys.stderr.write("swe_gym runner: bad request on the channel (%s), exiting\n" % (exc,))
        return 2
    finally:
        _end_shell(reaper)


def _reply_text(key, req, reply, out):
    """A reply frame, base64-encoded between markers (text-only transports carry it intact)."""
    frame = encode_frame(key, REPLY_TAG, dict(reply, id=req["id"]), out)
    return ONE_SHOT_BEGIN + "\n" + base64.encodebytes(frame).decode("ascii") + ONE_SHOT_END + "\n"


def _keyed_frame(data):
    """(key, request frame) of a one-shot request file: the key's hex on the first line."""
    key, _, frame = data.partition(b"\n")
    return binascii.unhexlify(key.strip()), frame


def serve_one(data):
    """The one-shot mode, for providers whose transport is one command per call (no stdin):
    ``data`` is the key line and one request frame; the reply goes to stdout (see ``_reply_text``)."""
    key, frame = _keyed_frame(data)
    req, payload = decode_frame(key, REQUEST_TAG, frame)
    reaper, wake_r = _prepare()
    try:
        sys.stdout.write(_reply_text(key, req, *_safe_handle(req, payload, reaper, wake_r)))
        sys.stdout.flush()
    finally:  # a shell cannot outlive this one-shot runner: the next call's gets a new one (and says so)
        _end_shell(reaper)
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


def _read_key_file(path):
    """The key the host uploaded for us, removed at once (commands start only after)."""
    with open(path, "rb") as handle_:
        data = handle_.read()
    os.unlink(path)
    return binascii.unhexlify(data.strip())


def serve_fifo(directory, key):
    """The daemon mode for one-shot transports: no Python start per call.

    Each client writes its pid, a newline and one request frame into the FIFO
    ``directory/req`` (one client at a time) and reads the reply from its own fd 3,
    which the daemon reaches as ``/proc/PID/fd/3``. ``directory/pid`` tells clients we live.
    Anyone in the sandbox can write to the FIFO, so requests are verified and never replayed.
    """
    verifier = Verifier(key)
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
            line, _, payload = frame.partition(b"\n")
            mac, req, raw = split_line(line)
            payload = payload[: req["size"]]
            verifier.accept(mac, req, raw, payload)
            reply_to = "/proc/%d/fd/3" % int(client)
        except ValueError:  # BadFrame included: not the host's
            continue
        if req.get("op") == "exit":
            _end_shell(reaper)
            return 0
        _write_reply(reply_to, _reply_text(key, req, *_safe_handle(req, payload, reaper, wake_r)))
        SPARE.refill(reaper)


def _decode_environment():
    """Variables a provider could not pass as they are (apptainer runs values through shell quoting) come
    base64-encoded in one variable of a safe alphabet; they join the environment every command gets."""
    encoded = os.environ.pop(ENCODED_ENV, "")
    if encoded:
        import base64

        os.environ.update(json.loads(base64.b64decode(encoded).decode("utf-8", "surrogateescape")))


def main(argv):
    # First of all: from now on no same-uid process without CAP_SYS_PTRACE can read our
    # memory, environment or file descriptors (where the key and the host's stream live).
    _prctl(_PR_SET_DUMPABLE, 0)
    _decode_environment()
    flags = {argv[i]: argv[i + 1] for i in range(0, len(argv) - 1, 2)}
    if "--request" in flags:  # the key and the frame in a file, deleted once read
        with open(flags["--request"], "rb") as handle_:
            data = handle_.read()
        os.unlink(flags["--request"])
        return serve_one(data)
    if "--serve-fifo" in flags:
        return serve_fifo(flags["--serve-fifo"], _read_key_file(flags["--key-file"]))
    return serve(float(flags["--ttl"]) if "--ttl" in flags else None, flags.get("--connect"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
