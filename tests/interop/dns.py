#!/usr/bin/env python3
"""A tiny DNS server standing in for the cluster's, for deploy/haproxy/haproxy-kubernetes.cfg
(tests/server/replicas.rs): answers A queries for one name with the addresses of the ready
replicas, as a headless Service's record does, and nothing else (an empty NOERROR answer).

    dns.py --name code-executor-mcp-replicas.code-executor.svc.cluster.local \
           --addresses-file FILE --port-file FILE

FILE holds one IPv4 address a line, read at every query (the test changes it as replicas
come and go). The UDP port (loopback, chosen by the kernel) is written to --port-file once
the server listens. Runs until killed.
"""

from __future__ import annotations

import argparse
import socket
import struct


def parse_name(msg: bytes, i: int) -> tuple[str, int]:
    labels = []
    while msg[i] != 0:
        n = msg[i]
        labels.append(msg[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    return ".".join(labels), i + 1


def answer(query: bytes, name: str, addresses: list[str]) -> bytes:
    (qid, _flags, qdcount) = struct.unpack("!HHH", query[:6])
    if qdcount < 1:
        return b""
    qname, end = parse_name(query, 12)
    qtype, _qclass = struct.unpack("!HH", query[end:end + 4])
    question = query[12:end + 4]
    found = qname.rstrip(".").lower() == name.lower()
    records = b""
    count = 0
    if found and qtype == 1:
        for a in addresses:
            # A pointer to the question's name (offset 12), type A, class IN, TTL 1 s.
            records += struct.pack("!HHHIH", 0xC00C, 1, 1, 1, 4) + socket.inet_aton(a)
            count += 1
    rcode = 0 if found else 3  # NXDOMAIN for any other name
    flags = 0x8180 | rcode  # response, recursion desired and available
    header = struct.pack("!HHHHHH", qid, flags, 1, count, 0, 0)
    return header + question + records


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--addresses-file", required=True)
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(sock.getsockname()[1]))
    import os

    os.replace(a.port_file + ".tmp", a.port_file)
    while True:
        query, peer = sock.recvfrom(4096)
        try:
            with open(a.addresses_file) as f:
                addresses = [line.strip() for line in f if line.strip()]
            reply = answer(query, a.name, addresses)
        except Exception:  # noqa: BLE001 - a malformed query gets no answer
            continue
        if reply:
            sock.sendto(reply, peer)


if __name__ == "__main__":
    main()
