"""Real servers on loopback for the remote-read tests (test_remote.py).

- :class:`RangeServer`: a plain HTTP/1.1 file server with ``Range`` support
  (206, ``Content-Range``, ``ETag``) and fault injection: a share of the
  requests fail their first attempts with a 503, a dropped connection, a
  truncated body (the connection closes early), a silently short body (a
  correct-looking 206 with fewer bytes than asked) or a slow response.
- :class:`MotoServer`: moto's S3 server (``moto[server]`` from PyPI in a venv
  under ``<repo>/build/moto-venv``) started as a subprocess on a free port;
  buckets are made and filled with plain HTTP requests (moto does not check
  signatures, so unsigned and signed requests both work).
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import http.server
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from venvs import ensure_venv

#: Fault kinds :class:`Faults` can inject.
FAULT_KINDS = ("503", "drop", "truncate", "short", "slow")

#: What the moto venv holds, and the import that proves it works.
MOTO_REQUIREMENTS = ("moto[server]>=5,<6",)
MOTO_CHECK = "import moto.server, flask"


@dataclass(frozen=True)
class Faults:
    """Which requests fail, and how.

    A request is identified by (path, Range header); its attempts are
    counted.  When the request is among the chosen ``share`` (a stable hash,
    so a test is deterministic) its first ``attempts`` attempts fail with
    ``kinds`` in turn; later attempts succeed.  ``attempts`` above the
    client's retries makes the read fail.  Paths ending in one of ``spare``
    never fail (the index documents, by default).
    """

    kinds: tuple[str, ...] = ()
    share: float = 1.0
    attempts: int = 1
    slow_seconds: float = 3.0
    spare: tuple[str, ...] = (".json",)

    def __post_init__(self) -> None:
        assert set(self.kinds) <= set(FAULT_KINDS), self.kinds

    def pick(self, key: str, attempt: int) -> str | None:
        """The fault for ``attempt`` (1-based) of request ``key``, if any."""
        if not self.kinds or attempt > self.attempts or key.split(" ")[0].endswith(self.spare):
            return None
        digest = hashlib.sha256(key.encode()).digest()
        if int.from_bytes(digest[:4], "big") / 2**32 >= self.share:
            return None
        return self.kinds[(attempt - 1 + digest[4]) % len(self.kinds)]


@dataclass
class RequestLog:
    """What the server saw: every request and the faults it injected."""

    requests: list[tuple[str, str]] = field(default_factory=list)
    faults: list[tuple[str, str]] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Requests being answered now, and the most at once so far.
    in_flight: int = 0
    most_in_flight: int = 0
    #: Body bytes sent (HEAD requests and faults' short bodies count what went out).
    bytes_sent: int = 0

    def enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def record(self, key: str) -> int:
        """Counts an attempt of ``key``; returns its number (1-based)."""
        with self.lock:
            path, _, rng = key.partition(" ")
            self.requests.append((path, rng))
            self.attempts[key] = self.attempts.get(key, 0) + 1
            return self.attempts[key]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without TCP_NODELAY each
    # response waits for the client's delayed ACK (about 40 ms on Linux).
    disable_nagle_algorithm = True
    server: "_Server"

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        log = self.server.owner.log
        log.enter()
        try:
            self._answer(body)
        finally:
            log.leave()

    def _answer(self, body: bool) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        rng = self.headers.get("Range", "")
        key = f"{path} {rng}"
        attempt = owner.log.record(key)
        if owner.delay:
            time.sleep(owner.delay)
        file = (owner.root / urllib.request.url2pathname(path.lstrip("/"))).resolve()
        if owner.root not in file.parents or not file.is_file():
            self._reply(404, b"not found\n", body)
            return
        stat = file.stat()
        size = stat.st_size
        status, start, end = 200, 0, size
        if rng:
            parsed = _parse_range(rng, size)
            if parsed is None:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status, (start, end) = 206, parsed
        with open(file, "rb") as f:
            f.seek(start)
            payload = f.read(end - start)
        fault = owner.faults.pick(key, attempt) if body else None
        if fault is not None:
            with owner.log.lock:
                owner.log.faults.append((key, fault))
        if fault == "503":
            self._reply(503, b"try again later\n", body)
            return
        if fault == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "slow":
            time.sleep(owner.faults.slow_seconds)
        announced = len(payload)
        if fault == "short":
            payload = payload[: len(payload) // 2]
            announced = len(payload)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"')
        self.send_header("Last-Modified", email.utils.formatdate(stat.st_mtime, usegmt=True))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{start + announced - 1}/{size}")
        self.send_header("Content-Length", str(announced))
        self.end_headers()
        if not body:
            return
        if fault == "truncate":
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(payload)
        with owner.log.lock:
            owner.log.bytes_sent += len(payload)

    def _reply(self, status: int, text: bytes, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        if body:
            self.wfile.write(text)


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``bytes=a-b`` / ``bytes=a-`` / ``bytes=-n`` -> [start, end); None if
    unsatisfiable or not a single range."""
    unit, _, spec = header.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        return None
    first, _, last = spec.strip().partition("-")
    if first == "":
        n = int(last)
        return (max(size - n, 0), size) if n > 0 else None
    start = int(first)
    end = min(int(last) + 1, size) if last else size
    return (start, end) if start < size and start < end else None


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # Clients open many connections at once (socketserver's default backlog
    # of 5 would make the server, not the client, the limit).
    request_queue_size = 128
    owner: "RangeServer"

    def handle_error(self, request, client_address) -> None:
        """Clients that hang up (timeouts, the tests' own faults) are expected."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class RangeServer:
    """Serves the files under ``root`` at ``http://127.0.0.1:<port>/``."""

    def __init__(self, root: Path, delay: float = 0.0) -> None:
        self.root = root.resolve()
        #: Seconds every request waits before it is answered (object-store latency).
        self.delay = delay
        self.faults = Faults()
        self.log = RequestLog()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Base URL, ending in ``/``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def set_faults(self, faults: Faults) -> None:
        """Replace the fault plan and forget past attempts."""
        self.faults = faults
        self.log = RequestLog()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoServer:
    """moto's S3 server on loopback (path-style, any credentials; objects
    are public-read, so unsigned requests can read them)."""

    def __init__(self, venv: Path, log: Path) -> None:
        python = ensure_venv(venv, MOTO_REQUIREMENTS, MOTO_CHECK, "moto[server] (the S3 test server)")
        self.port = free_port()
        self._log = open(log, "wb")
        self._proc = subprocess.Popen(
            [str(python), "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.url, timeout=5).read()
                break
            except urllib.error.HTTPError:
                break  # it answers
            except (urllib.error.URLError, OSError):
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise AssertionError(f"moto server did not start; see {log}:\n"
                                         f"{log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.2)

    @property
    def endpoint(self) -> str:
        """``host:port``, the form of GDAL's AWS_S3_ENDPOINT."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.endpoint}/"

    def _request(self, method: str, path: str, data: bytes | None = None) -> None:
        # Objects are public-read, so unsigned requests may read them too.
        # An explicit Content-Type: urllib's default (a form) makes moto parse
        # binary bodies as form data and hang.
        headers = {"x-amz-acl": "public-read", "Content-Type": "application/octet-stream"}
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()

    def make_bucket(self, bucket: str) -> None:
        self._request("PUT", bucket, b"")

    def upload_tree(self, bucket: str, root: Path) -> None:
        """Uploads every file under ``root`` as ``<bucket>/<path relative to root>``."""
        for f in sorted(root.rglob("*")):
            if f.is_file():
                key = urllib.request.pathname2url(f.relative_to(root).as_posix())
                self._request("PUT", f"{bucket}/{key}", f.read_bytes())

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._log.close()


@contextlib.contextmanager
def moto_bucket(venv: Path, log: Path, bucket: str, root: Path) -> Iterator[MotoServer]:
    """A moto S3 server holding the bucket ``bucket`` filled with the files
    under ``root``, closed at the end of the block."""
    server = MotoServer(venv, log)
    try:
        server.make_bucket(bucket)
        server.upload_tree(bucket, root)
        yield server
    finally:
        server.close()
