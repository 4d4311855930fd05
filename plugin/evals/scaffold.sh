#!/usr/bin/env bash
# A case's project (the directory given, else the caller's) in the run's workspace, with its playbook as the
# product wrote it (build.py beside this): playbook.json and the settings at the time the projections name, so the
# plugin's hooks inject them as is. Each case's scaffold.sh runs this.
set -euo pipefail
case_dir=${1:?the case directory}
cp -R "$case_dir/project/." .
TZ=UTC touch -t 202601010000.00 .claude/playbook.json .claude/playbook.settings.json
git init -q .
git add -A
git -c user.name=eval -c user.email=eval@example.com commit -qm "the project as it was"
