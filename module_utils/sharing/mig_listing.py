# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read `nvidia-smi mig -lgip` and `nvidia-smi mig -lgipp` as the driver prints them.

``parse_lgip(text, source)`` returns the GPU-instance profiles per GPU index, in the order
printed: ``{gpu: {profile: {"id", "free", "total", "memory_gib", "memory_text", "p2p", "sm",
"dec", "enc", "ce", "jpeg", "ofa", "slices", "line"}}}``. Each profile is printed as two rows,

    |   0  MIG 1g.10gb       19     7/7        9.75       No     16     1     0   |
    |                                                             1     1     0   |

the first with GPU, name, profile ID, instances free/total, memory (GiB, two decimals), P2P,
SM, DEC, ENC, the second with CE, JPEG, OFA (the header's two-line column layout). The
header, the border lines and the `|` frame are optional; lines may be indented (a listing
pasted into a document); a shell prompt that ran nvidia-smi may come first; remarks after
the last profile (``.......``, notes) are kept in ``remarks`` and not read. Anything else
inside the listing is refused with ListingError naming the line.

``parse_lgipp(text, source)`` returns ``{gpu: {profile_id: [(start, size), ...]}}`` from lines
like ``GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1`` (``Placement :`` for one).
"""

import re
from ansible.module_utils.lab.refusals import LabError

_ROW = re.compile(
    r"^(?P<gpu>\d+)\s+MIG\s+(?P<name>\S+)\s+(?P<id>\d+)\s+(?P<free>\d+)/(?P<total>\d+)\s+"
    r"(?P<mem>\d+(?:\.\d+)?)\s+(?P<p2p>Yes|No|N/A)\s+(?P<sm>\d+)\s+(?P<dec>\d+)\s+"
    r"(?P<enc>\d+)$")
_ROW2 = re.compile(r"^(?P<ce>\d+)\s+(?P<jpeg>\d+)\s+(?P<ofa>\d+)$")
_ROWISH = re.compile(r"^(\d+\s+MIG\b|\d[\d\s./]*$)")     # a profile row that did not read
_HEADER = re.compile(
    r"^(GPU instance profiles:|GPU\s+Name\s+ID\s+Instances\s+Memory\s+P2P\s+SM\s+DEC\s+ENC|"
    r"Free/Total\s+GiB\s+CE\s+JPEG\s+OFA)$")
_BORDER = re.compile(r"^[+|]?[-=+]+[+|]?$")
_SLICES = re.compile(r"^(\d+)g\.")
_PLACE = re.compile(r"^GPU\s+(?P<gpu>\d+)\s+Profile\s+ID\s+(?P<id>\d+)\s+Placements?\s*:\s*"
                    r"(?P<groups>(?:\{[\d,\s]*\}:\d+\s*)+)(?P<rest>.*)$")
_GROUP = re.compile(r"\{([\d,\s]*)\}:(\d+)")

LGIP_FIX = ("give the text `nvidia-smi mig -lgip` printed on the node, as printed (each "
            "profile is a row `GPU  MIG <name>  ID  free/total  GiB  P2P  SM  DEC  ENC` "
            "followed by a row `CE  JPEG  OFA`)")
LGIPP_FIX = ("give the text `nvidia-smi mig -lgipp` printed on the node, as printed (lines "
             "`GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1`)")


class ListingError(LabError):
    """An nvidia-smi mig -lgip / -lgipp listing that cannot be read (names the line)."""


def _cells(raw):
    """The content of one printed line without indentation, comment marks and the frame."""
    line = raw.strip()
    if line.startswith("#"):
        line = line.lstrip("#").strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return line.strip()


def _is_prompt(cells):
    return "nvidia-smi" in cells and ("-lgip" in cells or "list-gpu-instance-profiles" in cells
                                      or "mig" in cells)


def _text(text, source):
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ListingError("%s is not UTF-8 text" % source)
    if not isinstance(text, str) or not text.strip():
        raise ListingError("%s is empty; %s" % (source, LGIP_FIX))
    return text.replace("\r\n", "\n").split("\n")


def slices_of(name):
    """Compute slices of a profile from its name (``3g.40gb`` -> 3), or None."""
    match = _SLICES.match(name)
    return int(match.group(1)) if match else None


def parse_lgip(text, source="nvidia-smi mig -lgip"):
    """The profiles per GPU of an `nvidia-smi mig -lgip` listing; ListingError if unreadable."""
    lines = _text(text, source)
    gpus, remarks = {}, []
    pending = None          # (line number, row fields) waiting for its CE/JPEG/OFA row
    started = False
    for number, raw in enumerate(lines, 1):
        cells = _cells(raw)
        if not cells or _BORDER.match(raw.strip()) or _HEADER.match(cells):
            if pending is not None and cells:
                raise ListingError(
                    "%s line %d: the profile row at line %d (%s) has no CE/JPEG/OFA row under "
                    "it; %s" % (source, number, pending[0], pending[1]["name"], LGIP_FIX))
            continue
        if _is_prompt(cells) and pending is None:
            continue
        if cells.startswith("No MIG-enabled devices found") or \
                cells.startswith("No GPU instance profiles found"):
            raise ListingError("%s line %d says %r: no GPU is in MIG mode there, so it lists "
                               "no profiles. Fix: enable MIG mode (nvidia-smi -i N -mig 1) or "
                               "plan from the table without a listing" % (source, number, cells))
        row = _ROW.match(cells)
        if row:
            if pending is not None:
                raise ListingError(
                    "%s line %d: the profile row at line %d (%s) has no CE/JPEG/OFA row under "
                    "it; %s" % (source, number, pending[0], pending[1]["name"], LGIP_FIX))
            pending = (number, row.groupdict())
            started = True
            continue
        second = _ROW2.match(cells)
        if second and pending is not None:
            first_line, fields = pending
            pending = None
            gpu = int(fields["gpu"])
            name = fields["name"]
            profiles = gpus.setdefault(gpu, {})
            if name in profiles:
                raise ListingError("%s line %d: GPU %d lists profile %s twice (lines %d and %d); "
                                   "%s" % (source, first_line, gpu, name,
                                           profiles[name]["line"], first_line, LGIP_FIX))
            profiles[name] = {
                "id": int(fields["id"]), "free": int(fields["free"]),
                "total": int(fields["total"]), "memory_gib": float(fields["mem"]),
                "memory_text": fields["mem"], "p2p": fields["p2p"], "sm": int(fields["sm"]),
                "dec": int(fields["dec"]), "enc": int(fields["enc"]),
                "ce": int(second.group("ce")), "jpeg": int(second.group("jpeg")),
                "ofa": int(second.group("ofa")), "slices": slices_of(name),
                "line": first_line,
            }
            continue
        if started and pending is None and not raw.lstrip().startswith("|") and \
                not _ROWISH.match(cells):
            # text after a profile (".......", a note): kept as a remark, not read; a
            # further listing may follow (nvidia-smi run once per GPU)
            remarks.append(raw.rstrip())
            continue
        raise ListingError("%s line %d cannot be read as `nvidia-smi mig -lgip` output: %r; %s"
                           % (source, number, raw.strip(), LGIP_FIX))
    if pending is not None:
        raise ListingError("%s line %d: the profile row (%s) has no CE/JPEG/OFA row under it "
                           "(the listing is cut short); %s"
                           % (source, pending[0], pending[1]["name"], LGIP_FIX))
    if not gpus:
        raise ListingError("%s holds no profile row; %s" % (source, LGIP_FIX))
    for gpu, profiles in gpus.items():
        for name, profile in profiles.items():
            if profile["slices"] is None:
                raise ListingError("%s line %d: profile %s on GPU %d does not start with its "
                                   "compute slices (like 1g.); %s"
                                   % (source, profile["line"], name, gpu, LGIP_FIX))
            if profile["total"] < 1 or profile["free"] > profile["total"]:
                raise ListingError("%s line %d: profile %s shows %d/%d instances (free/total); "
                                   "%s" % (source, profile["line"], name, profile["free"],
                                           profile["total"], LGIP_FIX))
    return {"gpus": gpus, "remarks": remarks, "source": source}


def parse_lgipp(text, source="nvidia-smi mig -lgipp"):
    """The placements per GPU and profile ID of an `nvidia-smi mig -lgipp` listing."""
    if isinstance(text, str) and not text.strip():
        raise ListingError("%s is empty; %s" % (source, LGIPP_FIX))
    lines = _text(text, source)
    gpus, remarks = {}, []
    for number, raw in enumerate(lines, 1):
        cells = _cells(raw)
        if not cells or _is_prompt(cells):
            continue
        match = _PLACE.match(cells)
        if not match:
            if gpus and not cells.startswith("GPU"):
                remarks.append(raw.rstrip())
                continue
            raise ListingError("%s line %d cannot be read as `nvidia-smi mig -lgipp` output: "
                               "%r; %s" % (source, number, raw.strip(), LGIPP_FIX))
        gpu, profile_id = int(match.group("gpu")), int(match.group("id"))
        placements = []
        for starts, size in _GROUP.findall(match.group("groups")):
            numbers = [s.strip() for s in starts.split(",") if s.strip()]
            if not numbers or int(size) < 1:
                raise ListingError("%s line %d: an empty placement %r; %s"
                                   % (source, number, raw.strip(), LGIPP_FIX))
            placements.extend((int(s), int(size)) for s in numbers)
        if match.group("rest").strip():
            remarks.append(raw.rstrip())
        per_gpu = gpus.setdefault(gpu, {})
        if profile_id in per_gpu:
            raise ListingError("%s line %d: GPU %d profile ID %d is listed twice; %s"
                               % (source, number, gpu, profile_id, LGIPP_FIX))
        per_gpu[profile_id] = placements
    if not gpus:
        raise ListingError("%s holds no placement line; %s" % (source, LGIPP_FIX))
    return {"gpus": gpus, "remarks": remarks, "source": source}
