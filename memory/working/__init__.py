"""Working memory stores: per-session state and recent turns with a TTL."""
