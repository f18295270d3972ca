#!/usr/bin/env python3
"""A minimal npm registry on 127.0.0.1 serving the tarballs of one directory, so that
`npx -y <package>` resolves our launcher and its platform package exactly as it would from
npmjs.com (packuments, dist-tags, tarballs, integrity), without a network. A package it does
not have is a 404, as the real registry answers for an unpublished name.

    npm_registry.py DIR     prints "PORT" on its first line, serves until killed
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import sys
import tarfile
import urllib.parse

DIR = sys.argv[1]
PACKAGES: dict[str, dict] = {}
TARBALLS: dict[str, str] = {}


def load(port: int) -> None:
    for f in sorted(os.listdir(DIR)):
        if not f.endswith(".tgz"):
            continue
        path = os.path.join(DIR, f)
        with tarfile.open(path) as t:
            manifest = json.load(t.extractfile("package/package.json"))
        data = open(path, "rb").read()
        name, version = manifest["name"], manifest["version"]
        manifest["dist"] = {
            "tarball": f"http://127.0.0.1:{port}/-/{f}",
            "shasum": hashlib.sha1(data).hexdigest(),
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
        }
        manifest["_id"] = f"{name}@{version}"
        doc = PACKAGES.setdefault(name, {"name": name, "versions": {}, "dist-tags": {}})
        doc["versions"][version] = manifest
        doc["dist-tags"]["latest"] = version
        TARBALLS[f] = path


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        sys.stderr.write("registry: " + (args[0] % args[1:]) + "\n")

    def do_GET(self) -> None:
        path = urllib.parse.unquote(urllib.parse.urlparse(self.path).path)
        if path.startswith("/-/") and path[3:] in TARBALLS:
            body, ctype = open(TARBALLS[path[3:]], "rb").read(), "application/octet-stream"
        elif path.lstrip("/") in PACKAGES:
            body, ctype = json.dumps(PACKAGES[path.lstrip("/")]).encode(), "application/json"
        else:
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error":"Not found"}')
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    load(port)
    print(port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
