-- wrk script for every run except direct keep-alive.
-- TARGET_URL (set when wrk talks to a proxy): send absolute-form request lines for it.
-- CONNECTION_CLOSE=1: send "Connection: close", so the server closes after each response and wrk
-- opens a new connection for the next; count the responses that said close (wrk reconnects
-- after exactly those) and print the total for run.mjs to compare with the request count.
local target = os.getenv("TARGET_URL")
if target then
  wrk.path = target
  wrk.headers["Host"] = target:match("^%a+://([^/]+)")
end

if os.getenv("CONNECTION_CLOSE") == "1" then
  wrk.headers["Connection"] = "close"
  local threads = {}
  function setup(thread)
    table.insert(threads, thread)
  end
  function init(args)
    closes = 0
  end
  function response(status, headers, body)
    for name, value in pairs(headers) do
      if name:lower() == "connection" and value:lower():find("close") then
        closes = closes + 1
      end
    end
  end
  function done(summary, latency, requests)
    local n = 0
    for _, thread in ipairs(threads) do
      n = n + thread:get("closes")
    end
    io.write(string.format("Responses with Connection: close: %d\n", n))
  end
end
