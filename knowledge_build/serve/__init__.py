"""The front ends over a search: the service that tries the database first and falls back to the
artifacts (service.py), the MCP server and its transport (mcp_server.py, mcp_transport.py,
mcp_sources.py), grounded answers from a chat model (answer.py), the Slack app (slack_app.py) and
the retrieval log (retrieval_log.py).
"""
