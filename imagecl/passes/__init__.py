"""Analysis and transformation passes over the typed IR."""
