"""Per-namespace write locks: concurrent writes to one namespace (the same content, the same attribute, a forget
racing a restore) are serialised so they leave one live memory and one current value. `InProcessNamespaceLocks`
for one process; `RedisNamespaceLocks` (memory.locking.redis_lock) across gateway replicas."""

from memory.locking.in_process import InProcessNamespaceLocks

__all__ = ["InProcessNamespaceLocks"]
