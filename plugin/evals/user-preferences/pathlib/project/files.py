"""Finding the files the indexer reads."""
