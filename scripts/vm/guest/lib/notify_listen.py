"""Stands in for systemd's notification socket: binds a datagram socket at argv[1] and prints
every line a service sends there (READY=1, STATUS=…) as 'EPOCH LINE', flushed at once."""
import os
import socket
import sys
import time

path = sys.argv[1]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
while True:
    data = s.recv(65536).decode(errors="replace")
    for line in data.split("\n"):
        if line:
            print(f"{time.time():.3f} {line}", flush=True)
