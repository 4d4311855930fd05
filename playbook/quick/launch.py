"""`python -I -S .../playbook/quick/launch.py ARGS`: the `playbook` command and its hooks, with no site module and no
path hooks (see `playbook.quick.launcher`); `playbook.quick.launch:console` is the console script an installer writes.

A script is compiled on every run, a module is not: this file only finds the package beside itself and hands
over to `playbook.quick.launcher`, imported from its bytecode.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # absolute: never the cwd
    from playbook.quick.launcher import main

    main()
else:
    from .launcher import console as console
