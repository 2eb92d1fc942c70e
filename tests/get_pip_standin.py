"""Stand-in for the get-pip.py bootstrap script ansible-test downloads (its host is not
reachable from our machines). ansible-test looks for ~/.ansible/test/cache/get_pip_<ver>.py
first; tests/sanity.sh copies this file there. It gives the fresh venv pip with ensurepip and
then installs what ansible-test asked for (``pip==X`` and friends) from PyPI.
"""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
