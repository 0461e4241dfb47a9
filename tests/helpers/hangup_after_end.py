"""Run a tool through the proxy, then get two SIGHUPs after it ended, as a closing terminal sends.

Prints `saved <exit code>` and exits with the tool's code if wrapagent survives them
(what comes after the proxy is where a session saves its record).
Usage: hangup_after_end.py EXIT-CODE
"""

import os
import signal
import sys

from wrapagent.proxy import pty_loop

result = pty_loop.run(["sh", "-c", f"exit {int(sys.argv[1])}"], env=dict(os.environ))
for _ in range(2):
    os.kill(os.getpid(), signal.SIGHUP)
print(f"saved {result.exit_code}", flush=True)
sys.exit(result.exit_code)
