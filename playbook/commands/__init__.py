"""The `playbook` command: its parser and dispatch, one module per command group, and the work behind each."""
