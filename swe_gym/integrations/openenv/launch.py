"""`ServedEnv`: ``swe-gym serve`` in a child process, for scripts, tests and benchmarks.

It starts the server on a free loopback port with a token of its own, reads the address the server prints,
waits until it answers, and stops it with SIGTERM (which removes every session's sandboxes).

>>> with ServedEnv("--max-sessions", "4") as served:             # doctest: +SKIP
...     with GenericEnvClient(base_url=served.base_url).sync() as env:
...         result = env.reset(seed=0)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from swe_gym.integrations.openenv.auth import client_url, new_token

_ADDRESS = re.compile(r"^swe-gym serve: (http://\S+) ")
#: For requests to the server: never through a proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServedEnv:
    """A ``swe-gym serve ARGS...`` child process (``--port 0``, the token in its environment).

    ``env``: extra environment variables for it (e.g. ``SWE_GYM_RUN_ID``, to find its sandboxes by label).
    ``url`` is its address, ``base_url`` the same with the token, what OpenEnv's client takes.
    """

    def __init__(self, *args: str, env: Mapping[str, str] | None = None, start_timeout_s: float = 120.0) -> None:
        self.args = ["serve", "--port", "0", *args]
        self.token = new_token()
        self.environment = {**os.environ, **(env or {}), "SWE_GYM_SERVE_TOKEN": self.token}
        self.start_timeout_s = start_timeout_s
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self._stderr = tempfile.TemporaryFile(mode="w+")

    @property
    def base_url(self) -> str:
        return client_url(self.url, self.token)

    def start(self) -> ServedEnv:
        command = [sys.executable, "-m", "swe_gym.cli.main", *self.args]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=self.environment
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if match := _ADDRESS.match(line):
                self.url = match.group(1)
                break
        if not self.url:
            self.process.wait()
            raise RuntimeError(f"swe-gym serve exited ({self.process.returncode}): {self.stderr()}")
        self._wait_healthy()
        return self

    def get(self, path: str) -> Any:
        """``GET path`` on the server with the token (e.g. ``/sessions``), its JSON."""
        request = urllib.request.Request(f"{self.url}{path}", headers={"Authorization": f"Bearer {self.token}"})
        with _DIRECT.open(request, timeout=30) as response:
            return json.load(response)

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            try:
                self.get("/health")
                return
            except OSError:
                if time.monotonic() > deadline or self.exited:
                    self.stop()
                    raise RuntimeError(f"swe-gym serve never answered at {self.url}: {self.stderr()}") from None
            time.sleep(0.1)

    @property
    def exited(self) -> bool:
        return self.process is None or self.process.poll() is not None

    def stderr(self) -> str:
        """What the server wrote to stderr so far (its log)."""
        self._stderr.seek(0)
        return self._stderr.read()

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 120.0) -> int | None:
        """Signal the server (SIGTERM: a graceful stop) and wait for it; its exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode

    def __enter__(self) -> ServedEnv:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        self._stderr.close()
