#!/usr/bin/env python3
"""fs_bandwidth.py - the file-system bandwidths that bound fdmini's checkpoints and restart, for
files of given sizes in a directory (the checkpoint directory), from one thread as fdmini's
writer thread and its restart read them: a write of the whole file in 64 MiB pwrites followed by
fsync (a checkpoint is synced before it is committed), a read after the file's pages were dropped
from the page cache (posix_fadvise DONTNEED on the synced file: "cold", what a restart on
another node, or after the cache was recycled, reads), and a read right after ("cached").
Median of 3. It is the reference bench/checkpoints/overhead.sh compares fdmini with.

Usage: fs_bandwidth.py DIR BYTES...        one line per size:
  fs bytes=B write_fsync_gbs=W read_cold_gbs=C read_cached_gbs=H dir=DIR
"""
import os
import statistics
import sys
import time

CHUNK = 64 << 20


def write_fsync(path, size, buf):
    t = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        off = 0
        while off < size:
            n = min(CHUNK, size - off)
            off += os.pwrite(fd, buf[:n], off)
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t


def read(path, size, buf, drop):
    fd = os.open(path, os.O_RDONLY)
    try:
        if drop:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        t = time.perf_counter()
        off = 0
        while off < size:
            n = os.preadv(fd, [buf[: min(CHUNK, size - off)]], off)
            if n <= 0:
                sys.exit(f"fs_bandwidth: {path} ended at {off} bytes")
            off += n
        return time.perf_counter() - t
    finally:
        os.close(fd)


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    d = sys.argv[1]
    path = os.path.join(d, f"fs_bandwidth.{os.getpid()}.tmp")
    wbuf = memoryview(bytes(range(256)) * (CHUNK // 256))
    rbuf = memoryview(bytearray(CHUNK))
    try:
        for arg in sys.argv[2:]:
            size = int(arg)
            w, c, h = [], [], []
            for _ in range(3):
                w.append(size / write_fsync(path, size, wbuf) / 1e9)
                c.append(size / read(path, size, rbuf, True) / 1e9)
                h.append(size / read(path, size, rbuf, False) / 1e9)
            print(f"fs bytes={size} write_fsync_gbs={statistics.median(w):.2f} "
                  f"read_cold_gbs={statistics.median(c):.2f} read_cached_gbs={statistics.median(h):.2f} dir={d}",
                  flush=True)
    finally:
        if os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    main()
