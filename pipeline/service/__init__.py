"""The query service: an HTTP API (FastAPI under uvicorn) and an MCP server over the namespaces' indexes.

`app.py` holds the HTTP routes, `mcp_server.py` the MCP tools; both hand every query to `queries.py`,
which runs it against exactly one namespace with a deadline, a cancel signal and bounded output.
`auth.py` maps API keys (stored as sha256 digests) to tenants and the namespaces they may read;
`limits.py` holds the per-key concurrency limit, the body-size guard and the output truncation.
"""
