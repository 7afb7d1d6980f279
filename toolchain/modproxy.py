#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""A file:// Go module proxy for a module version the Go proxy serves only as its zip.

    modproxy.py DIR MODULE@VERSION      -> DIR/<escaped module>/@v/VERSION.{zip,mod,info}

proxy.golang.org answers github.com/NVIDIA/mig-parted v0.12.1's .info and .mod with 403 ("This
module version is not available"), yet serves its .zip, and sum.golang.org knows both hashes
(seen 2026-12-05). The go command needs the .mod (and .info to resolve a version), so this writes
them from the zip: the .mod is the zip's own go.mod, the .info names the version (its Time is not
the release's - the proxy refuses it - and go uses it for nothing here). toolchain/build.sh then
builds with GOPROXY=file://DIR,<GOPROXY>; go checks the zip and its go.mod against go.sum, whose
lines are the checksum database's (toolchain/mig-parted/go.sum), so nothing unverified is built.
Only the first https proxy of $GOPROXY (default proxy.golang.org) is asked; nothing else.
"""

import io
import json
import os
import re
import subprocess
import sys
import urllib.request
import zipfile


def escape(path):
    """The module proxy protocol's case escaping: 'NVIDIA' -> '!n!v!i!d!i!a'."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)


def proxy():
    value = subprocess.run(["go", "env", "GOPROXY"], stdout=subprocess.PIPE, universal_newlines=True,
                           check=True).stdout.strip()
    for entry in re.split(r"[,|]", value):
        if entry.startswith("https://"):
            return entry.rstrip("/")
    raise SystemExit("modproxy.py: no https proxy in GOPROXY=%s" % value)


def main(argv):
    if len(argv) != 3 or "@" not in argv[2]:
        sys.stderr.write(__doc__)
        return 2
    folder, (module, version) = argv[1], argv[2].split("@", 1)
    where = os.path.join(folder, escape(module), "@v")
    if os.path.exists(os.path.join(where, version + ".info")):
        return 0
    url = "%s/%s/@v/%s.zip" % (proxy(), escape(module), version)
    with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 (the Go proxy, https)
        data = response.read()
    gomod = zipfile.ZipFile(io.BytesIO(data)).read("%s@%s/go.mod" % (module, version))
    os.makedirs(where, exist_ok=True)
    for name, content in ((version + ".zip", data), (version + ".mod", gomod),
                          (version + ".info", json.dumps({"Version": version,
                                                          "Time": "1970-01-01T00:00:00Z"}).encode())):
        with open(os.path.join(where, name + ".tmp"), "wb") as handle:
            handle.write(content)
        os.replace(os.path.join(where, name + ".tmp"), os.path.join(where, name))
    sys.stderr.write("modproxy.py: %s@%s from %s (verified by go against go.sum)\n" % (module, version, url))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
