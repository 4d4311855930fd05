"""Learning from sessions: requests, the reflector and curator calls, transcripts, scrubbing, review, the injection budget's guard."""
