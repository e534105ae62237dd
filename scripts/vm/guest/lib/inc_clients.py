"""Concurrent counter clients for the power-cut scenario (runs in the guest).

  python3 inc_clients.py SOCKET FD CLIENTS

CLIENTS threads, each on its own kept-alive connection to kioskd's control socket, each sending
`POST /counter/NAME/inc` (even clients HOME, odd ones AWAY) one after the other: a request is
sent only after the previous one was answered, and each answer's value is written as
`ack NAME VALUE` to FD (the virtio-serial port, one write(2) per line) before the next request.
So each client has at most one increment unanswered at any moment. Runs until the power goes; a
refused or unreadable answer before that is reported as a `pc-error` console marker.
kioskctl would do the same, but a process start costs most of a second under emulation, which
would leave the clients too slow to overlap in the command pipeline.
"""

import json
import os
import socket
import sys
import threading


def marker(name: str, payload: str) -> None:
    with open("/dev/console", "w") as c:
        c.write(f"@@KIOSK:{name}:{payload.replace('@@', '')}@@\n")


def answer(conn: socket.socket, buf: bytearray) -> tuple[int, bytes]:
    """Reads one HTTP answer (status, body) from `conn`; `buf` keeps what follows it."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(4096)
        if not chunk:
            raise OSError("the control socket closed the connection")
        buf += chunk
    end = buf.index(b"\r\n\r\n")
    head = buf[:end].decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    length = 0
    for line in head[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
    while len(buf) < end + 4 + length:
        chunk = conn.recv(4096)
        if not chunk:
            raise OSError("the control socket closed the connection")
        buf += chunk
    body = bytes(buf[end + 4:end + 4 + length])
    del buf[:end + 4 + length]
    return status, body


def client(c: int, path: str, fd: int) -> None:
    name = "HOME" if c % 2 == 0 else "AWAY"
    request = f"POST /counter/{name}/inc HTTP/1.1\r\nHost: kioskd\r\nContent-Length: 0\r\n\r\n".encode()
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        buf = bytearray()
        while True:
            conn.sendall(request)
            status, body = answer(conn, buf)
            if status != 200:
                raise OSError(f"HTTP {status}: {body[:200]!r}")
            value = int(json.loads(body)["value"])
            os.write(fd, f"ack {name} {value}\n".encode())
    except Exception as e:  # noqa: BLE001 - any failure before the cut is the test's failure
        marker("pc-error", f"client {c}: an increment of {name} failed before the power cut: {e}")


def main() -> None:
    path, fd, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    threads = [threading.Thread(target=client, args=(c, path, fd), daemon=True) for c in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
