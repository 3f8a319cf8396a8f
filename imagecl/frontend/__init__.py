"""Front end: source text -> IR (pragmas, lark parse, tree -> dataclasses)."""
