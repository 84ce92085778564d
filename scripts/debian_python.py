"""Debian's interpreter for the scripts that need Debian's python3 packages.

numpy, PyYAML and torch come from Debian's python3-* packages
(scripts/setup.sh), which only Debian's own /usr/bin/python3 sees; a
pyenv or venv python3 earlier on PATH does not. A script whose imports
failed calls reexec() before giving up:

    try:
        import numpy as np
    except ImportError as e:
        debian_python.reexec()   # returns only if there is no other to try
        sys.exit(77)
"""

import os
import sys

DEBIAN = "/usr/bin/python3"
FLAG = "S2S_DEBIAN_REEXEC"  # set once tried, so a failing import cannot loop


def reexec():
    """Runs the script again, same arguments, under Debian's interpreter if
    that is another one and has not been tried; else returns."""
    if (os.path.exists(DEBIAN) and not os.environ.get(FLAG)
            and os.path.realpath(sys.executable) != os.path.realpath(DEBIAN)):
        os.environ[FLAG] = "1"
        os.execv(DEBIAN, [DEBIAN] + sys.argv)
