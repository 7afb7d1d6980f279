#!/usr/bin/env python3
"""Write the node's mock configuration into the node's copy of the mock NVML library.

    nvml_bake.py LIBRARY CONFIG CARDS [MIG_STATE]

A container that NVIDIA's DRA driver gives a GPU gets the driver's library and nvidia-smi alone
(its CDI spec mounts nothing beside them): the mock finds no nvml-mock.conf there and reads what
this wrote after the marker of its array nvml_mock_baked (nvml_mock/config.c) - the node's
configuration (CONFIG), its card's rows of the table (CARDS) and the MIG state (MIG_STATE, when
the file exists: the instances as of the node's last layout). LIBRARY is replaced by a new file
(write, then rename: a process that has it open keeps the old one); it must hold the marker once.
Standard library only (runs in the node's view).
"""
import os
import sys

MARK = b"NVML-MOCK-BAKED-CONFIG\n"
SIZE = 32768   # the array's size in nvml_mock/config.c


def baked_text(config, cards, mig=""):
    keys = {}
    for line in config.splitlines():
        key, eq, value = line.split("#", 1)[0].partition("=")
        if eq:
            keys[key.strip()] = value.strip()
    card = keys.get("card", "A100-SXM4-40GB")
    rows = [row for row in cards.splitlines()
            if row and not row.startswith("#") and (row.split("\t")[0] == card
                                                    or row.split("\t")[:2] == ["mig", card])]
    text = config.rstrip("\n") + "\n--- cards\n" + "\n".join(rows) + "\n"
    state = [line for line in mig.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if state:
        text += "--- mig\n" + "\n".join(state) + "\n"
    return text.encode()


def main(argv):
    if len(argv) not in (4, 5):
        print("usage: nvml_bake.py LIBRARY CONFIG CARDS [MIG_STATE]", file=sys.stderr)
        return 2
    library, config, cards = argv[1:4]
    mig_text = ""
    try:
        with open(library, "rb") as handle:
            original = handle.read()
        data = bytearray(original)
        with open(config, encoding="utf-8") as handle:
            config_text = handle.read()
        with open(cards, encoding="utf-8") as handle:
            cards_text = handle.read()
        if len(argv) == 5 and os.path.exists(argv[4]):
            with open(argv[4], encoding="utf-8") as handle:
                mig_text = handle.read()
    except OSError as err:
        print("nvml_bake.py: %s" % err, file=sys.stderr)
        return 1
    if data.count(MARK) != 1:
        print("nvml_bake.py: %s holds the mock's marker %d times, not once: not the mock's library"
              % (library, data.count(MARK)), file=sys.stderr)
        return 1
    text = baked_text(config_text, cards_text, mig_text)
    room = SIZE - len(MARK) - 1
    if len(text) > room:
        print("nvml_bake.py: the configuration and the card's rows take %d bytes, the library has room for %d"
              % (len(text), room), file=sys.stderr)
        return 1
    at = data.index(MARK) + len(MARK)
    data[at:at + room + 1] = text + b"\0" * (room + 1 - len(text))
    if bytes(data) == original:
        return 0
    tmp = "%s.baking.%d" % (library, os.getpid())
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, os.stat(library).st_mode & 0o7777)
    os.replace(tmp, library)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
