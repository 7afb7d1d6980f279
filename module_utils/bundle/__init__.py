# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What makes a support bundle safe to send - a map.

  redact.py   the redaction engine: built-in rules (registry auth in containerd configs and
              crictl info, secret-named fields, flags and assignments, credentials in URLs,
              Authorization headers, AWS keys, PEM private keys, JWTs) and the user's own
              (literal strings and regexes, each with a name), applied to every file of a
              bundle in its own format - JSON stays JSON, TOML stays TOML, YAML stays YAML - with
              one marker for a hidden value and a count per file and rule (never the values)
  archive.py  one archive to send (<dest>.tar.gz, 0600, relative names, no links) and its
              safe reading back (absolute names, ``..`` and links refused) for gpu_diagnose

gpu_support_bundle (the collector) and gpu_bundle_node (the node side) call redact.Redactor;
gpu_bundle_collect writes the archive; gpu_diagnose ``bundle:`` opens one with archive.unpacked.
"""
