"""The LLM boundary: typed requests/responses and errors, so nothing above imports openai."""
