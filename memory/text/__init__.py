"""The text tools the write path and the recall path share, at the bottom of the engine: words and normalising
(`words`), bilingual word patterns (`patterns`), time phrases (`time_phrases`), the CPU budget of a request's text
analysis (`budget`), token counts for budgets (`tokens`) and what a memory's keyword vector is built from
(`keyword_document`)."""
