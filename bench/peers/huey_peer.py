"""huey with its SQLite storage (SqliteHuey: WAL, its default, and fsync=True, which sets
synchronous=FULL; both read back), run as its docs advise: the consumer with thread workers
(16, as retryq's worker has slots) and its default polling (0.1 s, backing off by 1.15 to
10 s). huey has no bulk enqueue: the load calls the task once a job (one commit each).

Usage: python huey_peer.py (install|load N|work|pickup|enqueue) PATH
"""
import sys
import time

from peer_common import Tally, emit, enqueue_from_stdin, wall_ms

try:
    import huey
    from huey import SqliteHuey
except ImportError as e:
    emit({"unavailable": "huey is not installed (%s)" % e})
    sys.exit(0)

mode, path = sys.argv[1], sys.argv[-1]
queue = SqliteHuey(filename=path, fsync=True)
tally = Tally()


@queue.task()
def noop(job):
    if mode == "pickup":
        emit({"started": job, "at": wall_ms()})
    else:
        tally.hit()


def durability():
    conn = queue.storage.conn
    return conn.execute("PRAGMA synchronous").fetchone()[0], conn.execute("PRAGMA journal_mode").fetchone()[0]


if mode == "install":
    sync, journal = durability()
    if (sync, journal) != (2, "wal"):
        emit({"unavailable": "huey could not be set to WAL and synchronous=FULL: %s %s" % (sync, journal)})
    else:
        emit({"ready": True, "version": huey.__version__})
elif mode == "load":
    n = int(sys.argv[2])
    start = time.perf_counter()
    for i in range(n):
        noop(str(i))
    emit({"loaded": n, "seconds": time.perf_counter() - start})
elif mode == "enqueue":
    enqueue_from_stdin(noop)
else:
    consumer = queue.create_consumer(workers=16, worker_type="thread")
    if mode != "pickup":
        tally.report_every()
    emit({"ready": True, "version": huey.__version__})
    consumer.run()
