"""persist-queue's SQLiteAckQueue (WAL, its default, and synchronous=FULL, set and read back):
put, get and ack, one commit each. It counts no attempts and keeps no deadline, backoff or
history; its get is a select and then an update, so two processes can get the same item: it
runs in one process only. It has no bulk put: the load puts one job at a time. Its blocking
get polls the file when the put was in another process.

Usage: python persist_queue_peer.py (install|load N|work|pickup|enqueue) DIR
"""
import sys
import time

from peer_common import Tally, emit, enqueue_from_stdin, wall_ms

try:
    import persistqueue
except ImportError as e:
    emit({"unavailable": "persist-queue is not installed (%s)" % e})
    sys.exit(0)

mode, path = sys.argv[1], sys.argv[-1]
queue = persistqueue.SQLiteAckQueue(path, multithreading=True, auto_commit=True)
conns = list({id(c): c for c in (queue._putter, queue._getter)}.values())
for conn in conns:
    conn.execute("PRAGMA synchronous=FULL")
version = getattr(persistqueue, "__version__", "unknown")

if mode == "install":
    sync = [c.execute("PRAGMA synchronous").fetchone()[0] for c in conns]
    journal = [c.execute("PRAGMA journal_mode").fetchone()[0] for c in conns]
    if set(sync) != {2} or set(journal) != {"wal"}:
        emit({"unavailable": "persist-queue could not be set to WAL and synchronous=FULL: %s %s" % (sync, journal)})
    else:
        emit({"ready": True, "version": version})
elif mode == "load":
    n = int(sys.argv[2])
    start = time.perf_counter()
    for i in range(n):
        queue.put(str(i))
    emit({"loaded": n, "seconds": time.perf_counter() - start})
elif mode == "enqueue":
    enqueue_from_stdin(queue.put)
else:
    tally = Tally()
    if mode != "pickup":
        tally.report_every()
    emit({"ready": True, "version": version})
    while True:
        item = queue.get(block=True, raw=True)
        if mode == "pickup":
            emit({"started": item["data"], "at": wall_ms()})
        else:
            tally.hit()
        queue.ack(id=item["pqid"])
