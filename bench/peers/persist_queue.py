"""persist-queue's SQLiteAckQueue doing what retryq's throughput benchmark does: put, get
and ack one job at a time (three commits), for a fixed window, on a fresh file.

Set up as fairly as it allows: WAL (its own default) and synchronous=FULL, set explicitly
and read back. It counts no attempts, keeps no deadline or history, and its get is a select
and then an update, so two processes can get the same item: it runs in one process only.

Usage: python3 persist_queue.py DIR WINDOW_SECONDS; prints one JSON object.
"""
import json
import sys
import time

try:
    import persistqueue
except ImportError as e:
    print(json.dumps({"available": False, "why": "python package persist-queue is not installed (%s)" % e}))
    sys.exit(0)

PAYLOAD = '{"order":"order-7","sku":"snack","qty":3}'


def main():
    path, window = sys.argv[1], float(sys.argv[2])
    q = persistqueue.SQLiteAckQueue(path, multithreading=False, auto_commit=True)
    conns = {id(c): c for c in (q._putter, q._getter)}.values()
    for conn in conns:
        conn.execute("PRAGMA synchronous=FULL")
    sync = [c.execute("PRAGMA synchronous").fetchone()[0] for c in conns]
    mode = [c.execute("PRAGMA journal_mode").fetchone()[0] for c in conns]
    jobs = 0
    start = time.perf_counter()
    while time.perf_counter() - start < window:
        q.put(PAYLOAD)
        item = q.get(block=False, raw=True)
        q.ack(id=item["pqid"])
        jobs += 1
    seconds = time.perf_counter() - start
    print(json.dumps({
        "available": True,
        "jobs": jobs,
        "seconds": seconds,
        "version": getattr(persistqueue, "__version__", "unknown"),
        "synchronous": sync,
        "journal_mode": mode,
    }))


main()
