"""The hook roads and quick paths: run as scripts or from bytecode before (or instead of) the full machinery; standard library only at import."""
