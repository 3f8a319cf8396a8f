"""The typed IR: nodes, types, built-ins, constant evaluation, traversal."""
