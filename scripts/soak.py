#!/usr/bin/env python3
"""Soak test: remote reads for a set time under network faults.

Four sources made by GDAL (a DEFLATE COG, a ZSTD COG, a NITF IC=C8 and a
NITF IC=C3), each indexed by ``chunkref index --template-base``, are served
twice: over plain HTTP (tests/python/servers.py's RangeServer) and by moto's
S3 server, each behind a :class:`servers.FaultProxy` that answers a share of
the chunk requests with a 503 (Retry-After, S3 ``SlowDown``), a 500, a reset
mid-body, a body cut short, a stall of 4 to 8 s or a shifted
``Content-Range``.  Worker processes (``--processes``), each with
``--threads`` threads, read through ChunkRef for ``--seconds``: windows,
single blocks, overviews and whole bands of random datasets, each thread
with its own handles (and a fresh open for one read in twenty), and compare
every read with GDAL's native driver on the local source.

The parent samples each worker's anonymous RSS and open file descriptors
and prints, at the end: reads, errors (with their messages), wrong pixels
(must be 0), hangs (reads running past ``--hang`` seconds; must be 0), p50
and p99 read times, RSS after the first minute and at the end, and the
file descriptors.  ``GDAL_CACHEMAX`` (``--cachemax``, MB) is set small in
the workers so that GDAL's block cache fills in the first seconds and what
grows afterwards is the driver's.

    scripts/soak.py --seconds 60                      # the test command's run
    scripts/soak.py --seconds 1800 --threads 8        # docs/reliability.md
    scripts/soak.py --seconds 1800 --processes 4 --threads 2

Exit status 0 when no read was wrong, none hung, every worker finished
and (with ``--max-growth PCT``) RSS grew by less than PCT after the first
minute.
"""

from __future__ import annotations

import argparse
import array
import json
import multiprocessing as mp
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "python"))

BUCKET = "soak"
#: name -> (driver, bands, numpy dtype, creation options)
SOURCES = {
    "cog-deflate": ("COG", 3, "uint8", ["COMPRESS=DEFLATE", "BLOCKSIZE=256"]),
    "cog-zstd": ("COG", 1, "uint16", ["COMPRESS=ZSTD", "PREDICTOR=YES", "BLOCKSIZE=256"]),
    "nitf-c8": ("NITF", 1, "uint8",
                ["IC=C8", "QUALITY=100", "BLOCKXSIZE=256", "BLOCKYSIZE=256"]),
    "nitf-c3": ("NITF", 3, "uint8", ["IC=C3", "QUALITY=90", "BLOCKXSIZE=256", "BLOCKYSIZE=256"]),
}
SUFFIX = {"COG": ".tif", "NITF": ".ntf"}
#: What each read does, and how often.
OPERATIONS = {"window": 5, "block": 5, "overview": 2, "band": 1}
#: RSS is compared from this many seconds in (the caches have filled).
WARM_SECONDS = 60.0


def make_sources(data: Path, size: int, chunkref: Path) -> list[str]:
    """The sources and their indexes in ``data``; returns the file names."""
    import numpy as np
    from osgeo import gdal

    gdal.UseExceptions()
    data.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(46)
    y, x = np.mgrid[0:size, 0:size]
    names = []
    for name, (driver, bands, dtype, options) in SOURCES.items():
        path = data / f"{name}{SUFFIX[driver]}"
        names.append(path.name)
        index = data / f"{path.name}.index.json"
        if path.exists() and index.exists() and gdal.Open(str(path)).RasterXSize == size:
            continue
        top = 4000 if dtype == "uint16" else 255
        mem = gdal.GetDriverByName("MEM").Create(
            "", size, size, bands, gdal.GDT_UInt16 if dtype == "uint16" else gdal.GDT_Byte)
        for b in range(bands):
            smooth = (np.sin(x / (37.0 + 11 * b)) + np.cos(y / (23.0 + 7 * b)) + 2) / 4
            noise = rng.normal(0, 0.03, (size, size))
            band = np.clip((smooth + noise) * top, 0, top).astype(dtype)
            mem.GetRasterBand(b + 1).WriteArray(band)
        gdal.GetDriverByName(driver).CreateCopy(str(path), mem, options=options)
        done = subprocess.run([str(chunkref), "index", "--template-base", str(path), "-o",
                               str(index)], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"chunkref index {path} failed:\n{done.stderr}")
    return names


def rss_and_fds(pid: int) -> tuple[int, int] | None:
    """Anonymous RSS (KiB) and open file descriptors of ``pid``."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        anon = next(int(line.split()[1]) for line in status.splitlines()
                    if line.startswith("RssAnon:"))
        return anon, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None


# --------------------------------------------------------------------------
# Workers
# --------------------------------------------------------------------------


class Reference:
    """What GDAL's native driver reads from one local source: every band at
    full resolution and at each overview level."""

    def __init__(self, path: Path) -> None:
        from osgeo import gdal

        ds = gdal.Open(str(path))
        self.block = ds.GetRasterBand(1).GetBlockSize()
        self.bands = [ds.GetRasterBand(b + 1).ReadAsArray() for b in range(ds.RasterCount)]
        self.overviews = [
            [ds.GetRasterBand(b + 1).GetOverview(i).ReadAsArray() for b in range(ds.RasterCount)]
            for i in range(ds.GetRasterBand(1).GetOverviewCount())
        ]


class Buffers:
    """One thread's output memory: one array per dtype, grown to the
    largest read so far and reused (a view of its start) by every read:
    the harness allocates nothing per read, so the memory measured is the
    driver's and GDAL's, not numpy's (whole bands and 600 x 600 windows of
    three bands, compared 8 at a time, were most of the allocator's
    churn)."""

    def __init__(self) -> None:
        self._arrays: dict[str, object] = {}

    def get(self, dtype, shape: tuple[int, ...]):
        """A C-contiguous array of ``shape`` (contents undefined)."""
        import numpy as np

        size = int(np.prod(shape))
        key = np.dtype(dtype).str
        have = self._arrays.get(key)
        if have is None or have.size < size:
            have = self._arrays[key] = np.empty(size, dtype)
        return have[:size].reshape(shape)


def read_once(ds, ref: Reference, op: str, rng: random.Random, buffers: Buffers):
    """One read of ``op`` on ``ds`` into ``buffers``: (got, wanted,
    description); ``wanted`` is a view of the reference."""
    height, width = ref.bands[0].shape
    dtype = ref.bands[0].dtype
    b = rng.randrange(len(ref.bands))
    if op == "overview" and ref.overviews:
        level = rng.randrange(len(ref.overviews))
        want = ref.overviews[level][b]
        band = ds.GetRasterBand(b + 1).GetOverview(level)
        got = band.ReadAsArray(buf_obj=buffers.get(dtype, want.shape))
        return got, want, f"overview {level} band {b + 1}"
    if op == "band" or op == "overview":
        got = ds.GetRasterBand(b + 1).ReadAsArray(buf_obj=buffers.get(dtype, (height, width)))
        return got, ref.bands[b], f"band {b + 1}"
    if op == "block":
        bw, bh = ref.block
        bx, by = rng.randrange(-(-width // bw)), rng.randrange(-(-height // bh))
        x, y = bx * bw, by * bh
        w, h = min(bw, width - x), min(bh, height - y)
        got = ds.GetRasterBand(b + 1).ReadAsArray(x, y, w, h, buf_obj=buffers.get(dtype, (h, w)))
        return got, ref.bands[b][y:y + h, x:x + w], f"block {bx},{by} band {b + 1}"
    w, h = rng.randint(1, min(600, width)), rng.randint(1, min(600, height))
    x, y = rng.randrange(width - w + 1), rng.randrange(height - h + 1)
    shape = (len(ref.bands), h, w) if len(ref.bands) > 1 else (h, w)
    got = ds.ReadAsArray(x, y, w, h, buf_obj=buffers.get(dtype, shape))
    want = [band[y:y + h, x:x + w] for band in ref.bands]
    return got, want[0] if len(ref.bands) == 1 else want, f"window {x},{y} {w}x{h}"


def same(got, want) -> bool:
    """Whether ``got`` holds ``want`` (an array, or one array per band)."""
    import numpy as np

    if isinstance(want, list):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    # Row by row: comparing a whole band at once makes a temporary of its
    # size (4 MB of booleans), churn of the harness's own that glibc then
    # keeps in its arenas; rows are small enough to be reused at once.
    return got.shape == want.shape and all(np.array_equal(g, w) for g, w in zip(got, want))


class HeapCounter:
    """glibc's own count of this process's heap (``mallinfo2``): bytes in
    use (arenas and mmapped blocks) and bytes freed but kept by the
    allocator. A leak grows the first; what RSS gains while the first stays
    flat is memory the allocator keeps for reuse."""

    def __init__(self) -> None:
        import ctypes

        class Info(ctypes.Structure):
            _fields_ = [(name, ctypes.c_size_t) for name in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                "uordblks", "fordblks", "keepcost")]

        try:
            libc = ctypes.CDLL("libc.so.6")
            self._call, self._trim = libc.mallinfo2, libc.malloc_trim
            self._call.restype = Info
        except (OSError, AttributeError):
            self._call = None

    def trim(self) -> None:
        """Gives the freed memory malloc keeps back to the system
        (``malloc_trim(0)``)."""
        if self._call is not None:
            self._trim(0)

    def sample(self) -> tuple[int, int] | None:
        """(KiB in use, KiB free but kept)."""
        if self._call is None:
            return None
        i = self._call()
        return (i.uordblks + i.hblkhd) // 1024, i.fordblks // 1024


def worker(number: int, plan: dict, out: str) -> None:
    """Reads until the deadline in ``plan['threads']`` threads; writes the
    tallies to ``out`` (JSON)."""
    for key, value in plan["options"].items():
        os.environ[key] = value
    from osgeo import gdal

    gdal.UseExceptions()
    refs = {name: Reference(Path(plan["data"]) / name) for name in plan["sources"]}
    datasets = [(url, name) for name in plan["sources"] for url in plan["urls"][name]]
    lock = threading.Lock()
    tally = {"reads": 0, "errors": 0, "wrong": 0, "hangs": 0, "by_op": {}, "messages": {},
             "wrong_reads": [], "times": array.array("f")}
    running: dict[int, tuple[float, str]] = {}

    def reader(thread: int) -> None:
        rng = random.Random(plan["seed"] * 1000 + number * 100 + thread)
        handles: dict[str, object] = {}
        buffers = Buffers()
        ops = list(OPERATIONS)
        weights = [OPERATIONS[o] for o in ops]
        while time.time() < plan["deadline"]:
            url, name = rng.choice(datasets)
            op = rng.choices(ops, weights)[0]
            started = time.monotonic()
            with lock:
                running[thread] = (started, f"{op} of {url}")
            try:
                if url not in handles or rng.random() < 0.05:
                    handles.pop(url, None)
                    handles[url] = gdal.OpenEx(url, gdal.OF_RASTER, allowed_drivers=["ChunkRef"])
                got, want, what = read_once(handles[url], refs[name], op, rng, buffers)
                bad = not same(got, want)
                message = None
            except RuntimeError as e:
                bad, message, what = False, str(e), op
            elapsed = time.monotonic() - started
            with lock:
                running.pop(thread, None)
                tally["reads"] += 1
                tally["times"].append(elapsed)
                tally["by_op"][op] = tally["by_op"].get(op, 0) + 1
                if message is not None:
                    tally["errors"] += 1
                    short = message.split(": ChunkRef: ", 1)[-1][:400]
                    tally["messages"][short] = tally["messages"].get(short, 0) + 1
                elif bad:
                    tally["wrong"] += 1
                    tally["wrong_reads"].append(f"{url}: {what}")

    heap = HeapCounter()
    tally["heap"] = []

    def sample_heap() -> None:
        while time.time() < plan["deadline"]:
            if plan["trim"]:
                heap.trim()
            got = heap.sample()
            if got:
                with lock:
                    tally["heap"].append([time.time(), *got])
            time.sleep(plan["sample"])

    threading.Thread(target=sample_heap, daemon=True).start()
    threads = [threading.Thread(target=reader, args=(t,), daemon=True)
               for t in range(plan["threads"])]
    for t in threads:
        t.start()
    hung: set[int] = set()
    while any(t.is_alive() for t in threads):
        time.sleep(1)
        now = time.monotonic()
        with lock:
            for thread, (started, what) in running.items():
                if now - started > plan["hang"] and thread not in hung:
                    hung.add(thread)
                    tally["hangs"] += 1
                    tally["messages"][f"hang: {what}"] = 1
        if time.time() > plan["deadline"] + plan["hang"] + 30:
            break  # threads still running are hung: reported, not waited for
    tally["times"] = [round(t, 4) for t in tally["times"]]
    Path(out).write_text(json.dumps(tally))
    os._exit(0)  # hung threads must not keep the process


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------


def window_median(points: list[tuple[float, float]], since: float, until: float) -> float:
    """The median of the values sampled from ``since`` to ``until`` seconds."""
    values = sorted(v for t, v in points if since <= t <= until)
    return values[len(values) // 2] if values else float("nan")


def memory_figures(worker: int, samples: list[dict], heap: list[list[float]], start: float,
                   seconds: float) -> dict:
    """One worker's memory: anonymous RSS and glibc's heap in use, each as
    the median of the minute after warm-up against the median of the last
    minute (single samples swing by a few percent with the reads in
    flight), and its file descriptors."""
    warm = min(WARM_SECONDS, seconds / 2)
    span = min(60.0, seconds / 4)
    end = max(s["t"] for s in samples) if samples else seconds
    rss = [(s["t"], s["rss_anon_kib"] / 1024) for s in samples]
    used = [(t - start, u / 1024) for t, u, _ in heap]
    kept = [(t - start, k / 1024) for t, _, k in heap]
    out = {"worker": worker, "fds_min": min((s["fds"] for s in samples), default=0),
           "fds_max": max((s["fds"] for s in samples), default=0)}
    for name, points in (("rss", rss), ("heap_used", used), ("heap_kept", kept)):
        first = window_median(points, warm, warm + span)
        last = window_median(points, end - span, end)
        out[f"{name}_warm_mib"] = round(first, 1)
        out[f"{name}_end_mib"] = round(last, 1)
        out[f"{name}_max_mib"] = round(max((v for _, v in points), default=float("nan")), 1)
        out[f"{name}_growth_pct"] = round(100 * (last - first) / first, 2) if first else None
    return out


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--faults", type=float, default=0.05, help="share of chunk requests")
    parser.add_argument("--size", type=int, default=2048, help="source width and height")
    parser.add_argument("--cachemax", default="16", help="GDAL_CACHEMAX of the workers (MB)")
    parser.add_argument("--hang", type=float, default=120, help="seconds a read may take")
    parser.add_argument("--sample", type=float, default=5, help="seconds between samples")
    parser.add_argument("--max-growth", type=float, help="fail if RSS grows more (%%)")
    parser.add_argument("--trim", action="store_true",
                        help="workers call malloc_trim(0) before each sample: RSS without "
                             "the freed memory glibc keeps")
    parser.add_argument("--work", type=Path, default=REPO / "build" / "soak")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--seed", type=int, default=46)
    args = parser.parse_args()

    from servers import FaultProxy, MotoServer, RangeServer

    os.environ.setdefault("GDAL_DRIVER_PATH", str(REPO / "build" / "gdalplugins"))
    chunkref = Path(os.environ.get("CHUNKREF_BIN") or REPO / "target" / "release" / "chunkref")
    data = args.work / "data"
    names = make_sources(data, args.size, chunkref)
    args.work.mkdir(parents=True, exist_ok=True)
    http = RangeServer(data)
    moto = MotoServer(REPO / "build" / "moto-venv", args.work / "moto.log")
    moto.make_bucket(BUCKET)
    moto.upload_tree(BUCKET, data)
    proxies = {"http": FaultProxy(http.url, args.faults, seed=args.seed),
               "s3": FaultProxy(moto.url, args.faults, seed=args.seed + 1)}
    urls = {name: [f"/vsicurl/{proxies['http'].url}{name}.index.json",
                   f"/vsis3/{BUCKET}/{name}.index.json"] for name in names}
    options = {
        "GDAL_CACHEMAX": args.cachemax,
        "GDAL_HTTP_TIMEOUT": "3",
        "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
        "AWS_S3_ENDPOINT": proxies["s3"].endpoint, "AWS_HTTPS": "NO",
        "AWS_VIRTUAL_HOSTING": "FALSE", "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
    }
    deadline = time.time() + args.seconds
    plan = {"data": str(data), "sources": names, "urls": urls, "options": options,
            "threads": args.threads, "deadline": deadline, "hang": args.hang, "seed": args.seed,
            "sample": args.sample, "trim": args.trim}
    spawn = mp.get_context("spawn")
    outs = [args.work / f"worker-{i}.json" for i in range(args.processes)]
    for out in outs:
        out.unlink(missing_ok=True)
    procs = [spawn.Process(target=worker, args=(i, plan, str(out)))
             for i, out in enumerate(outs)]
    start = time.time()
    for p in procs:
        p.start()
    samples: list[dict] = []
    while any(p.is_alive() for p in procs):
        for i, p in enumerate(procs):
            got = rss_and_fds(p.pid) if p.is_alive() else None
            if got:
                samples.append({"t": round(time.time() - start, 1), "worker": i,
                                "rss_anon_kib": got[0], "fds": got[1]})
        if time.time() > deadline + args.hang + 90:
            for p in procs:
                p.kill()
            break
        time.sleep(args.sample)
    for p in procs:
        p.join(timeout=10)
    for proxy in proxies.values():
        proxy.close()
    http.close()
    moto.close()

    tallies = [json.loads(o.read_text()) if o.exists() else None for o in outs]
    finished = all(t is not None for t in tallies)
    tallies = [t for t in tallies if t]
    times = [x for t in tallies for x in t["times"]]
    messages: dict[str, int] = {}
    for t in tallies:
        for m, n in t["messages"].items():
            messages[m] = messages.get(m, 0) + n
    growth = [memory_figures(i, [s for s in samples if s["worker"] == i],
                             tallies[i]["heap"] if i < len(tallies) else [], start, args.seconds)
              for i in range(args.processes)]
    figures = {
        "seconds": args.seconds, "processes": args.processes, "threads": args.threads,
        "fault_share": args.faults, "cachemax_mb": args.cachemax, "size": args.size,
        "trim": args.trim,
        "reads": sum(t["reads"] for t in tallies),
        "errors": sum(t["errors"] for t in tallies),
        "wrong": sum(t["wrong"] for t in tallies),
        "hangs": sum(t["hangs"] for t in tallies),
        "workers_finished": finished,
        "p50_s": round(percentile(times, 50), 4), "p99_s": round(percentile(times, 99), 4),
        "max_s": round(max(times, default=float("nan")), 3),
        "requests": {k: p.requests for k, p in proxies.items()},
        "faults": {k: p.faults for k, p in proxies.items()},
        "by_op": {op: sum(t["by_op"].get(op, 0) for t in tallies) for op in OPERATIONS},
        "memory": growth, "messages": messages,
        "wrong_reads": [w for t in tallies for w in t["wrong_reads"]][:20],
        "samples": samples,
    }
    report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    ok = finished and figures["wrong"] == 0 and figures["hangs"] == 0
    if args.max_growth is not None:
        ok = ok and all(g["rss_growth_pct"] < args.max_growth for g in growth)
    return 0 if ok else 1


def report(f: dict) -> None:
    """The figures as a short table."""
    print(f"soak: {f['seconds']:.0f} s, {f['processes']} process(es) x {f['threads']} threads, "
          f"{100 * f['fault_share']:.0f} % faults, GDAL_CACHEMAX {f['cachemax_mb']} MB")
    print(f"reads {f['reads']}  errors {f['errors']}  wrong {f['wrong']}  hangs {f['hangs']}  "
          f"workers finished {f['workers_finished']}")
    print(f"read time p50 {f['p50_s']} s  p99 {f['p99_s']} s  max {f['max_s']} s")
    print(f"requests {f['requests']}  faults {f['faults']}")
    for g in f["memory"]:
        print(f"worker {g['worker']}: fds {g['fds_min']}..{g['fds_max']}")
        for name, what in (("rss", "RSS (anon)"), ("heap_used", "heap in use"),
                           ("heap_kept", "heap freed, kept by malloc")):
            print(f"  {what}: {g[name + '_warm_mib']} MiB after warm-up -> "
                  f"{g[name + '_end_mib']} MiB in the last minute "
                  f"({g[name + '_growth_pct']:+.2f} %), max {g[name + '_max_mib']} MiB")
    for m, n in sorted(f["messages"].items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {n} x {m}")
    for w in f["wrong_reads"]:
        print(f"  WRONG: {w}")


if __name__ == "__main__":
    sys.exit(main())
