-- Makes wrk talk like a proxy client: it connects to the proxy given on the command line and
-- sends absolute-form request lines for TARGET_URL (e.g. http://127.0.0.1:PORT/).
local target = os.getenv("TARGET_URL")
assert(target, "TARGET_URL is not set")
wrk.path = target
wrk.headers["Host"] = target:match("^%a+://([^/]+)")
