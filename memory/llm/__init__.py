"""The optional LLM behind an OpenAI-compatible `/v1/chat/completions` API (`HINDSIGHT_LLM_URL`, `_MODEL`,
`_API_KEY`), one module per concern:

- `client`: `ChatConfig` and `ChatClient`, the HTTP client with timeouts and retries every use shares;
- `summaries`: `ChatSummarizer`, abstractive consolidation summaries;
- `importance`: `ChatImportanceRater`, importance ratings for the write pipeline (`HINDSIGHT_LLM_IMPORTANCE`).

Every failure is `BackendUnavailable`, and every caller has a fallback that needs no LLM.
"""

from memory.llm.client import ChatClient, ChatConfig
from memory.llm.importance import ChatImportanceRater, parse_rating
from memory.llm.summaries import ChatSummarizer

__all__ = ["ChatClient", "ChatConfig", "ChatImportanceRater", "ChatSummarizer", "parse_rating"]
