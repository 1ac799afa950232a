"""Clients of outside services the engine calls: OpenAI-compatible HTTP APIs (`openai_api`) and the one
translation of Redis failures (`redis_errors`)."""
