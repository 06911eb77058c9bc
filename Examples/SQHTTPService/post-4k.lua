-- wrk script for sq-http-service: every request is POST /hash with the same 4 KiB body.
-- The body is built here with the same rule as load.py's body() (byte i = (31 * i + 7) mod 256),
-- so load.py can check the digest the service returns for it.
local bytes = {}
for i = 0, 4095 do
  bytes[#bytes + 1] = string.char((31 * i + 7) % 256)
end
wrk.method = "POST"
wrk.path = "/hash"
wrk.body = table.concat(bytes)
wrk.headers["Content-Type"] = "application/octet-stream"
-- No response() callback: wrk itself reports non-2xx answers, which load.py refuses.
