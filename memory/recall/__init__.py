"""The recall path (docs/DESIGN.md § "Recall"): from a query to ranked memories.

- `steps`: the checked filter of a request, the two searches (by meaning, then by keywords), the versions as of a
  date, and the scored hits;
- `feedback`: pseudo-relevance feedback for the keyword half;
- `cues`: who a query asks about, whether it asks when, who spoke a memory;
- `ranking`: hybrid relevance, the conversation lifts, which candidates a recall keeps;
- `scoring`: the recall score and its weights (`ScoringWeights`, declared once);
- `access` and `use_feedback`: what a recall and an agent's feedback change afterwards (use counts, importance).
"""
