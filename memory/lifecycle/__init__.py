"""What happens to a memory after it is written: expiry, archiving and capacity eviction (`forgetting`,
`archive`), one maintenance pass over a tenant (`maintenance`), what the engine hides or demotes and why (`hidden`),
and what a caller may see of a memory's links (`visibility`)."""
