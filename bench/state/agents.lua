-- wrk as a fleet of agents behind a proxy: absolute-form GETs of TARGET_URL, each request as the
-- next agent of AUTHS (comma-separated base64 "id:token" for Proxy-Authorization), round robin.
local target = os.getenv("TARGET_URL")
assert(target, "TARGET_URL is not set")
local host = target:match("^%a+://([^/]+)")
local auths = {}
for a in string.gmatch(os.getenv("AUTHS") or "", "[^,]+") do
  auths[#auths + 1] = "Basic " .. a
end
assert(#auths > 0, "AUTHS is empty")
local i = 0

request = function()
  i = i + 1
  local headers = { ["Host"] = host, ["Proxy-Authorization"] = auths[(i % #auths) + 1] }
  return wrk.format("GET", target, headers)
end
