"""Third-party plugins that misbehave in every way a hook can (nodehost-rogue 3.0)."""
