-- wrk script: one fixed request with fixed headers; print a JSON summary when done.
-- Usage: wrk ... -s bench/request.lua URL -- BODY_FILE [HEADER VALUE]...   (a POST of the file)
--        wrk ... -s bench/request.lua URL -- GET [HEADER VALUE]...         (a GET)

function init(args)
   if args[1] == "GET" then
      wrk.method = "GET"
   else
      local f = assert(io.open(args[1], "rb"))
      wrk.body = f:read("*a")
      f:close()
      wrk.method = "POST"
   end
   for i = 2, #args, 2 do
      wrk.headers[args[i]] = args[i + 1]
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      '\nBENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"mean":%.1f,"max":%d}}\n',
      summary.requests, summary.duration, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
