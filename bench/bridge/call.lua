-- wrk script: one small MCP tools/call per request, as a streamable HTTP client sends it.
-- TOKEN (optional) is the agent's bearer token for trajgate's bridge.
local token = os.getenv("TOKEN")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
if token then wrk.headers["Authorization"] = "Bearer " .. token end
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"' .. os.getenv("TARGET_PATH") .. '"}}}'
