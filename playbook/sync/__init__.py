"""Syncing the user-level playbook with a git remote of the user's: each machine's learning merged into one log."""
