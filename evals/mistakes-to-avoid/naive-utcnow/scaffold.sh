#!/usr/bin/env bash
# The case's project in the run's workspace, with its playbook as the product wrote it (evals/build.py):
# playbook.json and the settings at the time the projections name, so the plugin's hooks inject them as is.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cp -R "$here/project/." .
TZ=UTC touch -t 202601010000.00 .claude/playbook.json .claude/playbook.settings.json
git init -q .
git add -A
git -c user.name=eval -c user.email=eval@example.com commit -qm "the project as it was"
