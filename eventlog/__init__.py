"""The core: domain rules, event types, decide/evolve and the append-only store. No other layer is imported here.

Callers import the module they need (`eventlog.errors` for a hook, `eventlog.store` for a reader): the
package itself loads nothing, so one module does not bring the deciders and every rule with it.
"""
