# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Kubernetes API client from a kubeconfig, for our modules and the grader."""

KUBE_ARGS = dict(
    kubeconfig=dict(type="path", required=True),
    context=dict(type="str"),
)


def api_client(kubeconfig, context=None):
    """Return kubernetes.client.ApiClient, or raise RuntimeError with the reason."""
    try:
        from kubernetes import client, config
    except ImportError as exc:
        raise RuntimeError("the Python package 'kubernetes' is missing (%s); install "
                           "requirements.txt into the Python that runs Ansible" % exc)
    configuration = client.Configuration()
    try:
        config.load_kube_config(config_file=kubeconfig, context=context,
                                client_configuration=configuration)
    except Exception as exc:  # the client raises several unrelated types here
        raise RuntimeError("cannot load kubeconfig %s: %s" % (kubeconfig, exc))
    return client.ApiClient(configuration)


def api_error_text(exc):
    """A short text for kubernetes.client ApiException."""
    import json
    body = getattr(exc, "body", None)
    try:
        message = json.loads(body).get("message")
    except Exception:
        message = None
    return "%s %s%s" % (getattr(exc, "status", ""), getattr(exc, "reason", ""),
                        (": " + message) if message else "")
