"""The shop's tools: definitions, registry (allow-list), executor with access control."""
