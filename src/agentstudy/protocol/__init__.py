"""Pure data contracts: manifests, schedules, prompts and ledger records (no IO)."""
