#!/usr/bin/env bash
# This case's project in the run's workspace: the suite's scaffold.sh does it for every case.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec bash "$here/../../scaffold.sh" "$here"
