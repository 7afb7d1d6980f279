#!/usr/bin/env python3
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Carry the node's loopback API-server port to the host's loopback API server.

    netns_forward.py NETNS_FILE PORT

The real node lives in a network namespace of its own, and every control-plane listener stays
on the host's loopback. This process listens on 127.0.0.1:PORT *inside* the node's namespace
(it enters the namespace only to open that socket, then returns) and connects each accepted
connection to 127.0.0.1:PORT on the host. Nothing else is reachable through it: one port, one
destination, loopback on both sides. TLS passes through untouched (the kubelet checks the API
server's certificate, whose SANs name 127.0.0.1).
"""
import ctypes
import os
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000


def _setns(fd):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "setns: %s" % os.strerror(err))


def listen_inside(netns_file, port):
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(netns_file, os.O_RDONLY)
    try:
        _setns(target)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
    finally:
        _setns(home)   # back to the host's namespace: connections go to the host's loopback
        os.close(target)
        os.close(home)
    return sock


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(listener, port):
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=10)
            upstream.settimeout(None)
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: netns_forward.py NETNS_FILE PORT")
    port = int(sys.argv[2])
    serve(listen_inside(sys.argv[1], port), port)
