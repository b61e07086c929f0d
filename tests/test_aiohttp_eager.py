"""aiohttp's request writes start at once under timewarp on Python < 3.12, as they do on the real host's 3.12
(integrations/aiohttp_eager.py): a burst of concurrent requests reaches the server while the client is still
starting the later ones."""
import asyncio
import socket
import subprocess
import sys
import threading

import pytest

aiohttp = pytest.importorskip("aiohttp")


def _burst_sees_earlier_requests(c: int = 6) -> list[bool]:
    """Start c concurrent POSTs on warm keep-alive connections; at each one's start, whether the bytes of an
    earlier one already wait in a server socket (peeked, not read: the server reads nothing until all have
    started)."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    port = lsock.getsockname()[1]
    conns: list[socket.socket] = []
    gate = threading.Event()

    def serve(s: socket.socket, first_round: list[bool]) -> None:
        while True:
            if not first_round[0]:
                gate.wait()
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            n = int([x for x in head.split(b"\r\n") if x.lower().startswith(b"content-length:")][0].split(b":")[1])
            while len(body) < n:
                body += s.recv(65536)
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            first_round[0] = False

    def accept() -> None:
        while True:
            try:
                s, _ = lsock.accept()
            except OSError:
                return
            conns.append(s)
            threading.Thread(target=serve, args=(s, [True]), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    seen: list[bool] = []

    async def client() -> None:
        url = f"http://127.0.0.1:{port}/"
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            async def post(measure: bool) -> None:
                if measure:
                    seen.append(any(_readable(s) for s in list(conns)))
                    if len(seen) == c:
                        gate.set()
                async with session.post(url, data=b"x" * 4000) as r:
                    await r.read()

            await asyncio.gather(*(post(False) for _ in range(c)))   # c keep-alive connections
            await asyncio.gather(*(post(True) for _ in range(c)))

    asyncio.run(client())
    lsock.close()
    return seen


def _readable(s: socket.socket) -> bool:
    try:
        return len(s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)) > 0
    except BlockingIOError:
        return False


def test_eager_writes_put_each_request_on_the_wire_as_it_starts():
    from timewarp.integrations import aiohttp_eager
    import aiohttp.client_reqrep as reqrep

    before = reqrep.asyncio
    try:
        aiohttp_eager.install()
        seen = _burst_sees_earlier_requests()
    finally:
        reqrep.asyncio = before
    # the first request starts with nothing sent; every later one finds an earlier one's bytes at the server
    assert seen[0] is False and all(seen[1:]), seen
    if sys.version_info < (3, 12):   # the reason for it: unpatched, 3.11 sends nothing until all have started
        assert not any(_burst_sees_earlier_requests()), "aiohttp on this Python already writes eagerly"


def test_timewarp_run_installs_eager_writes_below_python_3_12(tmp_path):
    prog = tmp_path / "which.py"
    prog.write_text("import aiohttp.client_reqrep as m, asyncio; print(type(m.asyncio).__name__, m.asyncio.sleep is asyncio.sleep)\n")
    out = subprocess.run([sys.executable, "-m", "timewarp", "run", "--", sys.executable, str(prog)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    want = "_AsyncioEager True" if sys.version_info < (3, 12) else "module True"
    assert want in out.stdout, out.stdout
