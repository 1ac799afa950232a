"""The agent loop: an agent's task sessions (`sessions`) over the event stream (`memory.events`) and the
facts extracted from it (`memory.extraction`)."""
