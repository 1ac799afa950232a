"""The shape of the tools' structured results: output schemas (`shapes`), memories and sessions on the wire
(`serialize`), the batch answer (`batch`), the agent loop's answers (`sessions`) and export records (`records`)."""
