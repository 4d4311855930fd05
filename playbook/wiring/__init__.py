"""Wiring into Claude Code and the machine: where playbooks live, settings, hooks, notices, install and provisioning."""
