# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Small helpers shared by the command-line tools in server/tools.

Exit codes used by every tool:
  0  success
  1  bad input data (malformed or inconsistent files)
  2  bad command line (argparse's own code)
  3  an optional dependency (a Debian python3-* package) is not installed
"""

import importlib
import sys

EXIT_INPUT = 1
EXIT_MISSING_DEPENDENCY = 3


class InputError(Exception):
    """A problem with an input file, reported as 'FILE:LINE: message'.

    Raised instead of letting a ValueError escape so that the user sees where
    the file is wrong, not a traceback into the parser.
    """

    def __init__(self, path, line, message):
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


def warn(prog, message):
    print(f"{prog}: {message}", file=sys.stderr, flush=True)


def fail(prog, message, code=EXIT_INPUT):
    warn(prog, f"error: {message}")
    sys.exit(code)


def import_or_exit(prog, module, debian_package, why=""):
    """Imports `module` or exits with code 3 and a one-line hint.

    The tools depend on Debian's python3-* packages, which only Debian's own
    interpreter (/usr/bin/python3) sees; a python3 found earlier on PATH
    (pyenv, a virtualenv) lacks them, so the hint names the interpreter too.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        reason = f" ({why})" if why else ""
        fail(prog,
             f"Python module '{module}' is not available to {sys.executable}{reason}; "
             f"install it with: apt-get install --no-install-recommends {debian_package} "
             f"(and run the tool with /usr/bin/python3)",
             EXIT_MISSING_DEPENDENCY)
