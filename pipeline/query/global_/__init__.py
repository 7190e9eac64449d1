"""Global search: map-reduce over token-budgeted batches of community reports, with static, `auto` or dynamic community selection."""
