"""What one running gateway holds: the `Runtime` (`runtime`) assembled from settings (`assembly`), the state
replicas share (`shared_state`), background work and its supervisor (`background`), scheduled maintenance
(`maintenance`) and embedding-model migrations (`reembed`)."""
