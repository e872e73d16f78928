"""Real servers on loopback for the remote-read tests (test_remote.py).

- :class:`RangeServer`: a plain HTTP/1.1 file server on asyncio with
  ``Range`` support (206, ``Content-Range``, ``ETag``), an optional latency
  added to every request, and fault injection: a share of the
  requests fail their first attempts with a 503, a dropped connection, a
  truncated body (the connection closes early), a silently short body (a
  correct-looking 206 with fewer bytes than asked) or a slow response.
- :class:`MotoServer`: moto's S3 server (``moto[server]`` from PyPI in a venv
  under ``<repo>/build/moto-venv``) started as a subprocess on a free port;
  buckets are made and filled with plain HTTP requests (moto does not check
  signatures, so unsigned and signed requests both work).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import hashlib
import http
import os
import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
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


#: The request headers :class:`RangeServer` reads (the others are not parsed).
_FIELDS = re.compile(
    r"^(range|connection)[ \t]*:[ \t]*(.*?)[ \t]*\r?$", re.IGNORECASE | re.MULTILINE
)


@dataclass(frozen=True)
class _Request:
    """One request's head: what :class:`RangeServer` reads of it."""

    method: str
    #: The request target without its ``?query``, as the client sent it.
    path: str
    #: The ``Range`` header, ``""`` when absent.
    range: str
    #: Whether the connection stays open after the answer.
    keep_alive: bool

    @classmethod
    def parse(cls, head: bytes) -> "_Request | None":
        """The request line and headers up to the blank line; None when the
        request line is not ``METHOD TARGET HTTP/x.y``."""
        line, _, fields = head.decode("latin-1").partition("\r\n")
        words = line.split()
        if len(words) != 3 or not words[2].startswith("HTTP/"):
            return None
        method, target, version = words
        headers: dict[str, str] = {}
        for name, value in _FIELDS.findall(fields):
            headers.setdefault(name.lower(), value)
        connection = {t.strip() for t in headers.get("connection", "").lower().split(",")}
        # HTTP/1.1 keeps the connection unless told to close; 1.0 closes it
        # unless told to keep it (as http.server does).
        if version >= "HTTP/1.1":
            keep_alive = "close" not in connection
        else:
            keep_alive = "keep-alive" in connection
        return cls(method, target.split("?", 1)[0], headers.get("range", ""), keep_alive)


@functools.lru_cache(maxsize=4096)
def _http_date(seconds: int) -> str:
    """``seconds`` since the epoch as an HTTP date, formatted once, not in
    every response's ``Date`` and ``Last-Modified``."""
    return email.utils.formatdate(seconds, usegmt=True)


def _head(status: int, fields: list[tuple[str, str]]) -> bytes:
    """A response's status line and header block, ``Date`` added."""
    lines = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}",
             f"Date: {_http_date(int(time.time()))}"]
    lines += [f"{name}: {value}" for name, value in fields]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _plain(status: int, text: bytes, body: bool, close: bool = False) -> bytes:
    """A whole text/plain response (its body left out for HEAD)."""
    fields = [("Content-Type", "text/plain"), ("Content-Length", str(len(text)))]
    if close:
        fields.append(("Connection", "close"))
    return _head(status, fields) + (text if body else b"")


@dataclass
class _Found:
    """The file a request names, and the bytes it asks for."""

    stat: os.stat_result
    status: int  # 200 or 206
    start: int
    payload: bytes  # empty for HEAD
    length: int  # the payload's length, for HEAD too


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``bytes=a-b`` / ``bytes=a-`` / ``bytes=-n`` -> [start, end); None if
    unsatisfiable, malformed or not a single range."""
    unit, _, spec = header.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        return None
    first, _, last = spec.strip().partition("-")
    try:
        if first == "":
            n = int(last)
            return (max(size - n, 0), size) if n > 0 else None
        start = int(first)
        end = min(int(last) + 1, size) if last else size
    except ValueError:
        return None
    return (start, end) if 0 <= start < size and start < end else None


class RangeServer:
    """Serves the files under ``root`` at ``http://127.0.0.1:<port>/``.

    One asyncio event loop in a daemon thread answers every connection, so
    the server holds as many requests in flight as clients send (the added
    ``delay`` and the ``slow`` fault are timers, not blocked threads) and
    spends little CPU per request beside the client being measured.  Files
    are opened per request: a test may rewrite a file between reads.
    """

    #: Pending connections the listening socket queues (clients open many at once).
    BACKLOG = 1024

    def __init__(self, root: Path, delay: float = 0.0) -> None:
        self.root = root.resolve()
        #: Seconds every request waits before it is answered (object-store latency).
        self.delay = delay
        self.faults = Faults()
        self.log = RequestLog()
        #: Open connections: each handler task and its stream, closed by close().
        self._connections: dict[asyncio.Task, asyncio.StreamWriter] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"RangeServer {self.root}", daemon=True
        )
        self._thread.start()
        sock = socket.create_server(("127.0.0.1", 0), backlog=self.BACKLOG)
        self.port: int = sock.getsockname()[1]
        try:
            self._server = self._call(
                asyncio.start_server(self._connection, sock=sock, backlog=self.BACKLOG)
            )
        except BaseException:
            sock.close()
            self._stop_loop()
            raise

    @property
    def url(self) -> str:
        """Base URL, ending in ``/``."""
        return f"http://127.0.0.1:{self.port}/"

    def set_faults(self, faults: Faults) -> None:
        """Replace the fault plan and forget past attempts."""
        self.faults = faults
        self.log = RequestLog()

    def close(self) -> None:
        """Stops listening, closes every open connection (a request being
        answered is abandoned) and ends the loop's thread."""
        if self._loop.is_closed():
            return
        self._call(self._shutdown())
        self._stop_loop()

    def _call(self, coroutine):
        """Runs ``coroutine`` on the loop and returns its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=60)

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _shutdown(self) -> None:
        self._server.close()
        for task, writer in list(self._connections.items()):
            writer.transport.abort()
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        await asyncio.sleep(0)  # the aborted transports close their sockets

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answers the requests of one connection until either side closes it."""
        task = asyncio.current_task()
        self._connections[task] = writer
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # clients that hang up (timeouts, the tests' own faults) are expected
        finally:
            del self._connections[task]
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Reads and answers one request; False when the connection must close."""
        request = _Request.parse(await reader.readuntil(b"\r\n\r\n"))
        if request is None:
            writer.write(_plain(400, b"bad request line\n", True, close=True))
            return False
        if request.method not in ("GET", "HEAD"):
            writer.write(_plain(501, b"only GET and HEAD\n", True, close=True))
            return False
        log = self.log  # set_faults() may replace it meanwhile
        log.enter()
        try:
            keep = await self._answer(request, log, writer)
            await writer.drain()
        finally:
            log.leave()
        return keep and request.keep_alive

    async def _answer(
        self, request: _Request, log: RequestLog, writer: asyncio.StreamWriter
    ) -> bool:
        """Writes the answer to ``request``; False when the connection must close."""
        body = request.method == "GET"
        key = f"{request.path} {request.range}"
        attempt = log.record(key)
        if self.delay:
            await asyncio.sleep(self.delay)
        found = self._find(request, body)
        if isinstance(found, bytes):  # 404 or 416
            writer.write(found)
            return True
        fault = self.faults.pick(key, attempt) if body else None
        if fault is not None:
            with log.lock:
                log.faults.append((key, fault))
        if fault == "503":
            writer.write(_plain(503, b"try again later\n", body))
            return True
        if fault == "drop":
            return False  # closed without an answer
        if fault == "slow":
            await asyncio.sleep(self.faults.slow_seconds)
        payload, announced = found.payload, found.length
        if fault == "short":
            payload = payload[: len(payload) // 2]
            announced = len(payload)
        stat = found.stat
        fields = [
            ("Content-Type", "application/octet-stream"),
            ("Accept-Ranges", "bytes"),
            ("ETag", f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"'),
            ("Last-Modified", _http_date(int(stat.st_mtime))),
        ]
        if found.status == 206:
            last = found.start + announced - 1
            fields.append(("Content-Range", f"bytes {found.start}-{last}/{stat.st_size}"))
        fields.append(("Content-Length", str(announced)))
        head = _head(found.status, fields)
        if fault == "truncate":
            # The announced length, half the body, and the connection closes.
            writer.write(head + payload[: len(payload) // 2])
            return False
        # One write: header and body leave in the same segments (asyncio sets
        # TCP_NODELAY; two small writes would cost two sends and two wake-ups).
        writer.write(head + payload)
        with log.lock:
            log.bytes_sent += len(payload)
        return True

    def _find(self, request: _Request, body: bool) -> _Found | bytes:
        """The file under ``root`` that ``request`` names and the bytes it
        asks for (read for GET: files are opened per request, a test may
        rewrite one between reads); or a whole 404 / 416 response."""
        opened = self._open(request.path)
        if opened is None:
            return _plain(404, b"not found\n", body)
        fd, stat = opened
        try:
            size = stat.st_size
            status, start, end = 200, 0, size
            if request.range:
                parsed = _parse_range(request.range, size)
                if parsed is None:
                    unsatisfiable = [("Content-Range", f"bytes */{size}"), ("Content-Length", "0")]
                    return _head(416, unsatisfiable)
                status, (start, end) = 206, parsed
            payload = os.pread(fd, end - start, start) if body else b""
        finally:
            os.close(fd)
        return _Found(stat, status, start, payload, len(payload) if body else end - start)

    def _open(self, path: str) -> tuple[int, os.stat_result] | None:
        """The regular file under ``root`` that the URL path ``path`` names:
        an open descriptor and its status; None when there is none."""
        inside = f"{self.root}{os.sep}"
        name = os.path.normpath(os.path.join(inside, urllib.request.url2pathname(path.lstrip("/"))))
        if not name.startswith(inside):  # ".." out of root
            return None
        try:
            fd = os.open(name, os.O_RDONLY)
        except (OSError, ValueError):  # missing, unreadable, a NUL in the name
            return None
        # Where it really is, symbolic links resolved (Linux's /proc: much
        # cheaper than os.path.realpath): a link may lead out of root.
        stat = os.fstat(fd)
        if S_ISREG(stat.st_mode) and os.readlink(f"/proc/self/fd/{fd}").startswith(inside):
            return fd, stat
        os.close(fd)
        return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """A server started as a process of its own, its output going to
    ``log``; ready once ``url`` answers (any HTTP status), within 60 s."""

    def __init__(self, args: list[str], log: Path, url: str, what: str) -> None:
        #: The server's output.
        self.log_path = log
        self._log = open(log, "wb")
        self._proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except urllib.error.HTTPError:
                break  # it answers
            except (urllib.error.URLError, OSError):
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise AssertionError(f"{what} did not start; see {log}:\n"
                                         f"{log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.2)

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._log.close()


class MotoServer(ServerProcess):
    """moto's S3 server on loopback (path-style, any credentials; objects
    are public-read, so unsigned requests can read them; werkzeug logs
    every request to ``log``)."""

    def __init__(self, venv: Path, log: Path) -> None:
        python = ensure_venv(venv, MOTO_REQUIREMENTS, MOTO_CHECK, "moto[server] (the S3 test server)")
        self.port = free_port()
        super().__init__([str(python), "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                         log, self.url, "moto server")

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

class StacApi(ServerProcess):
    """``rustac serve`` (its in-memory backend) on loopback over the items
    of ``items`` (an ItemCollection file), collections made for them;
    ``rustac`` is the command of the venv of :func:`venvs.stac_python`."""

    def __init__(self, rustac: Path, items: Path, log: Path) -> None:
        self.port = free_port()
        super().__init__([str(rustac), "serve", "--create-collections", "--addr",
                          f"127.0.0.1:{self.port}", str(items)], log, self.url, "rustac serve")

    @property
    def url(self) -> str:
        """The API's landing page, ending in ``/``."""
        return f"http://127.0.0.1:{self.port}/"

    @property
    def search(self) -> str:
        return self.url + "search"


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


#: Fault kinds :class:`FaultProxy` can inject (the soak test's, from issue 46).
PROXY_FAULTS = ("503", "500", "reset", "short", "stall", "shift")

_S3_ERRORS = {
    "503": (b"SlowDown", b"Please reduce your request rate."),
    "500": (b"InternalError", b"We encountered an internal error. Please try again."),
}


class FaultProxy:
    """An HTTP/1.1 proxy on loopback in front of ``upstream`` (a
    :class:`RangeServer` or moto's S3 server) that answers a ``share`` of
    the ranged GET requests (index documents, ``spare`` suffixes, never)
    with a fault chosen at random among ``kinds``: a 503 with Retry-After and
    an S3 ``SlowDown`` body, a 500 with an ``InternalError`` body, a
    connection reset mid-body, a body cut short (the connection closes), a
    stall of 4 to 8 s before the answer, or a ``Content-Range`` shifted by
    one byte.  Each attempt draws anew, so a retried request usually
    succeeds.  Threads, one per connection; each keeps its own connection
    upstream."""

    def __init__(self, upstream: str, share: float = 0.05, kinds: tuple[str, ...] = PROXY_FAULTS,
                 spare: tuple[str, ...] = (".json",), seed: int = 46) -> None:
        import http.client
        import http.server
        import random
        from urllib.parse import urlsplit

        assert set(kinds) <= set(PROXY_FAULTS), kinds
        up = urlsplit(upstream)
        self.share, self.kinds, self.spare = share, kinds, spare
        self.faults: dict[str, int] = {}
        self.requests = 0
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._answer(True)

            def do_HEAD(self) -> None:
                self._answer(False)

            def _upstream(self) -> http.client.HTTPConnection:
                conn = getattr(self, "_conn", None)
                if conn is None:
                    conn = self._conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
                return conn

            def _fetch(self) -> tuple[int, str, list[tuple[str, str]], bytes]:
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = up.netloc
                for attempt in range(2):  # a kept connection the upstream closed: once more
                    conn = self._upstream()
                    try:
                        conn.request(self.command, self.path, headers=headers)
                        r = conn.getresponse()
                        return r.status, r.reason, r.getheaders(), r.read()
                    except (http.client.HTTPException, OSError):
                        conn.close()
                        self._conn = None
                        if attempt:
                            raise
                raise AssertionError("unreachable")

            def _answer(self, body: bool) -> None:
                fault = proxy.pick(self.path, self.headers.get("Range"), body)
                if fault in ("503", "500"):
                    code, text = _S3_ERRORS[fault]
                    payload = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>' + code
                               + b"</Code><Message>" + text + b"</Message></Error>")
                    self.send_response(int(fault))
                    if fault == "503":
                        self.send_header("Retry-After", "1")
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault == "stall":
                    time.sleep(proxy.stall_seconds())
                status, reason, headers, data = self._fetch()
                if fault == "shift" and status == 206:
                    headers = [(k, _shifted(v) if k.lower() == "content-range" else v)
                               for k, v in headers]
                self.send_response(status, reason)
                for k, v in headers:
                    if k.lower() not in ("connection", "transfer-encoding", "keep-alive",
                                         "server", "date"):
                        self.send_header(k, v)
                if fault in ("reset", "short"):
                    self.send_header("Connection", "close")
                self.end_headers()
                if not body:
                    return
                if fault in ("reset", "short") and len(data) > 1:
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    if fault == "reset":  # RST instead of FIN
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                   b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.close_connection = True
                    return
                self.wfile.write(data)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

            def handle_error(self, request, client_address) -> None:
                pass  # clients that time out and hang up are expected

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        """``host:port``, the form of GDAL's AWS_S3_ENDPOINT."""
        return f"127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return f"http://{self.endpoint}/"

    def pick(self, path: str, range_header: str | None, body: bool) -> str | None:
        """The fault for this attempt, if any (counted)."""
        with self._lock:
            self.requests += 1
            if (not body or not range_header or not self.kinds
                    or path.split("?")[0].endswith(self.spare)
                    or self._random.random() >= self.share):
                return None
            fault = self._random.choice(self.kinds)
            self.faults[fault] = self.faults.get(fault, 0) + 1
            return fault

    def stall_seconds(self) -> float:
        with self._lock:
            return self._random.uniform(4.0, 8.0)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _shifted(content_range: str) -> str:
    """``bytes a-b/n`` moved one byte on (``bytes a+1-b+1/n``)."""
    m = re.fullmatch(r"bytes (\d+)-(\d+)/(\S+)", content_range.strip())
    if not m:
        return content_range
    a, b, n = int(m[1]), int(m[2]), m[3]
    return f"bytes {a + 1}-{b + 1}/{n}"
