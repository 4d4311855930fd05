"""What the user reads: the views of the playbook and its history as text, JSON and the history page."""
