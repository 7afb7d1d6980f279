#!/usr/bin/env python3
"""Write the node's mock configuration into the node's copy of the mock NVML library.

    nvml_bake.py LIBRARY CONFIG CARDS

A container that NVIDIA's DRA driver gives a GPU gets the driver's library and nvidia-smi alone
(its CDI spec mounts nothing beside them): the mock finds no nvml-mock.conf there and reads what
this wrote after the marker of its array nvml_mock_baked (nvml_mock/config.c) - the node's
configuration (CONFIG) and its card's rows of the table (CARDS), as the node started. LIBRARY is
changed in place; it must hold the marker once. Standard library only (runs in the node's view).
"""
import sys

MARK = b"NVML-MOCK-BAKED-CONFIG\n"
SIZE = 8192   # the array's size in nvml_mock/config.c


def baked_text(config, cards):
    keys = {}
    for line in config.splitlines():
        key, eq, value = line.split("#", 1)[0].partition("=")
        if eq:
            keys[key.strip()] = value.strip()
    card = keys.get("card", "A100-SXM4-40GB")
    rows = [row for row in cards.splitlines()
            if row and not row.startswith("#") and (row.split("\t")[0] == card
                                                    or row.split("\t")[:2] == ["mig", card])]
    return (config.rstrip("\n") + "\n--- cards\n" + "\n".join(rows) + "\n").encode()


def main(argv):
    if len(argv) != 4:
        print("usage: nvml_bake.py LIBRARY CONFIG CARDS", file=sys.stderr)
        return 2
    library, config, cards = argv[1:]
    try:
        with open(library, "rb") as handle:
            data = bytearray(handle.read())
        with open(config, encoding="utf-8") as handle:
            config_text = handle.read()
        with open(cards, encoding="utf-8") as handle:
            cards_text = handle.read()
    except OSError as err:
        print("nvml_bake.py: %s" % err, file=sys.stderr)
        return 1
    if data.count(MARK) != 1:
        print("nvml_bake.py: %s holds the mock's marker %d times, not once: not the mock's library"
              % (library, data.count(MARK)), file=sys.stderr)
        return 1
    text = baked_text(config_text, cards_text)
    room = SIZE - len(MARK) - 1
    if len(text) > room:
        print("nvml_bake.py: the configuration and the card's rows take %d bytes, the library has room for %d"
              % (len(text), room), file=sys.stderr)
        return 1
    at = data.index(MARK) + len(MARK)
    data[at:at + room + 1] = text + b"\0" * (room + 1 - len(text))
    with open(library, "r+b") as handle:
        handle.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
