"""What every Python peer script shares: one JSON object a line on stdout, which
bench/src/peer_line.rs reads.

Lines: {"ready": true, "version": V} once a worker can take jobs; {"loaded": N, "seconds": S}
after a bulk load; {"jobs": K, "first": T0, "last": T1} (wall-clock seconds of the first and
last job handled) every 100 ms while a worker runs; {"committed": ID, "at": MS} after an
enqueue's commit returned; {"started": ID, "at": MS} when a handler starts;
{"unavailable": WHY} when the peer cannot run.
"""
import json
import sys
import threading
import time


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def wall_ms():
    return time.time() * 1000.0


class Tally:
    """Jobs handled by this process, and when the first and the last were."""

    def __init__(self):
        self.lock = threading.Lock()
        self.jobs = 0
        self.first = None
        self.last = None

    def hit(self):
        now = time.time()
        with self.lock:
            if self.first is None:
                self.first = now
            self.jobs += 1
            self.last = now

    def line(self):
        with self.lock:
            return {"jobs": self.jobs, "first": self.first, "last": self.last}

    def report_every(self, seconds=0.1):
        """A daemon thread printing the tally whenever it changed."""

        def loop():
            seen = -1
            while True:
                time.sleep(seconds)
                line = self.line()
                if line["jobs"] != seen and line["first"] is not None:
                    seen = line["jobs"]
                    emit(line)

        threading.Thread(target=loop, daemon=True).start()


def enqueue_from_stdin(enqueue_one):
    """Pickup's enqueuer: one id a line on stdin, each enqueued alone and answered with the
    wall-clock instant its enqueue returned (its commit acknowledged)."""
    for line in sys.stdin:
        job = line.strip()
        if not job:
            continue
        enqueue_one(job)
        emit({"committed": job, "at": wall_ms()})
