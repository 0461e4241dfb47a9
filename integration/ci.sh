#!/bin/sh
# What CI runs for the integration suite (2-core runner, budget 20 min including npm).
#   sh integration/ci.sh            # from anywhere; extra arguments go to pytest
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
start=$(date +%s)
"$PYTHON" integration/install_clis.py
echo "install_clis: $(( $(date +%s) - start )) s"
exec "$PYTHON" -m pytest -v --durations=20 tests integration "$@"
