"""Real open-source shop engines the live-shop tests run against (medusa/: Medusa v2)."""
