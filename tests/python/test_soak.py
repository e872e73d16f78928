"""The soak test's short run (scripts/soak.py, issue 46): a minute of reads
by 2 processes of 4 threads through ChunkRef, over HTTP and moto's S3
server behind fault-injecting proxies (5 % of chunk requests: 503, 500,
resets, short bodies, stalls, shifted Content-Range), each read compared
with GDAL's native driver.  The 30-minute runs are in docs/reliability.md."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO_ROOT
from servers import PROXY_FAULTS


def test_a_minute_of_faulty_remote_reads(tmp_path):
    out = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "soak.py"), "--seconds", "60",
         "--processes", "2", "--threads", "4", "--size", "1024", "--cachemax", "8",
         "--work", str(tmp_path / "work"), "--json", str(out)],
        capture_output=True, text=True, timeout=600)
    assert out.exists(), done.stdout + done.stderr
    f = json.loads(out.read_text())
    report = done.stdout[-3000:]
    assert f["workers_finished"] and f["wrong"] == 0 and f["hangs"] == 0, report
    assert done.returncode == 0, report
    assert f["reads"] > 500, report
    # Every fault kind was met, and retries absorbed (nearly) all of them.
    met = {kind for faults in f["faults"].values() for kind in faults}
    assert met == set(PROXY_FAULTS), report
    assert f["errors"] <= f["reads"] // 200, report
    # File descriptors stay bounded (connections are pooled, files closed).
    assert all(g["fds_max"] < 200 for g in f["memory"]), report
