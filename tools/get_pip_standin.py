"""A stand-in for ansible-test's pip bootstrap script (get-pip.py), whose download site is not
reachable from this machine: pip comes from the interpreter's own ensurepip wheel, then the
packages ansible-test asks for are installed from PyPI as the real script would.

ansible-test runs pip with a cleaned environment, so a CA bundle the machine's pip needs
(PIP_CERT, e.g. for a TLS-inspecting proxy) is handed to every later pip run in the new
virtualenv by a sitecustomize.py in it."""
import ensurepip
import os
import subprocess
import sys

cert = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"
if os.path.isfile(cert):
    os.environ["PIP_CERT"] = cert
ensurepip.bootstrap(upgrade=True)
if os.path.isfile(cert):
    import sysconfig
    with open(os.path.join(sysconfig.get_paths()["purelib"], "sitecustomize.py"), "w",
              encoding="utf-8") as handle:
        handle.write("import os\nos.environ.setdefault('PIP_CERT', %r)\n" % cert)
# get-pip.py's own options (not pip install options): leave setuptools/wheel out as asked
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args))
