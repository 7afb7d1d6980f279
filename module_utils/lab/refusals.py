# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one root of every refusal the lab's module_utils raise.

module_utils raise a LabError (or a subclass named for what was refused); modules catch it and
turn it into ``fail_json(msg=str(error))`` - module_utils never call ``fail_json`` themselves.
The message is what the user reads: it names the input (file, line, option) and the fix.
"""


class LabError(Exception):
    """A refusal with a message for the user (``message``; ``str(error)`` is the same text)."""

    def __init__(self, message, *args):
        self.message = message
        super().__init__(message, *args)

    def __str__(self):
        return str(self.message)


class KubeconfigError(LabError):
    """The kubeconfig cannot be used (missing, unreadable, no context, no server, ...)."""
