# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options every module that talks to the cluster shares (module_utils/kube/client.py)."""


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of the kubeconfig to use.
      - Understood - client certificates and CAs (files, relative to the kubeconfig, or
        C(-data)), C(insecure-skip-tls-verify), C(tls-server-name), C(token), C(tokenFile),
        basic auth, a server URL with a path prefix, and exec credential plugins (EKS, GKE,
        AKS, OIDC helpers). Refused with a message - legacy C(auth-provider) entries and
        C(proxy-url).
      - The client is the standard library's HTTPS (no C(kubernetes) package needed).
    type: path
    required: true
  context:
    description: Context in the kubeconfig; its current context when omitted.
    type: str
notes:
  - Talks to the API server from the host the task runs on - usually the controller
    (C(delegate_to) or a C(localhost) play).
"""
