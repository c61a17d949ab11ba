"""pgqueuer on PostgreSQL, run as its docs advise: a PgQueuer over an asyncpg connection,
an async entrypoint, `run()` with its default batch size (10) and no concurrency limit; its
workers wake by LISTEN/NOTIFY. Bulk load: one `enqueue` call with lists (one INSERT).

Usage: python pgqueuer_peer.py (install|load N|work|pickup|enqueue) URL
"""
import asyncio
import sys

from peer_common import Tally, emit, enqueue_from_stdin, wall_ms

try:
    import asyncpg
    import pgqueuer
    from pgqueuer import AsyncpgDriver, PgQueuer
    from pgqueuer.queries import Queries
except ImportError as e:
    emit({"unavailable": "pgqueuer is not installed (%s)" % e})
    sys.exit(0)


async def main(mode, url, arg):
    conn = await asyncpg.connect(url)
    queries = Queries(AsyncpgDriver(conn))
    if mode == "install":
        await queries.install()
        emit({"ready": True, "version": pgqueuer.__version__})
        return
    if mode == "load":
        n = int(arg)
        loop = asyncio.get_running_loop()
        start = loop.time()
        await queries.enqueue(["noop"] * n, [b"{}"] * n, [0] * n)
        emit({"loaded": n, "seconds": loop.time() - start})
        return
    if mode == "enqueue":
        def one(job):
            fut = asyncio.run_coroutine_threadsafe(queries.enqueue("noop", job.encode()), loop)
            fut.result()
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(enqueue_from_stdin, one)
        return
    qm = PgQueuer.from_asyncpg_connection(conn)
    tally = Tally()

    if mode == "pickup":
        @qm.entrypoint("noop")
        async def noop(job):
            emit({"started": job.payload.decode(), "at": wall_ms()})
    else:
        @qm.entrypoint("noop")
        async def noop(job):
            tally.hit()
        tally.report_every()
    emit({"ready": True, "version": pgqueuer.__version__})
    await qm.run()


asyncio.run(main(sys.argv[1], sys.argv[-1], sys.argv[2] if len(sys.argv) > 3 else None))
