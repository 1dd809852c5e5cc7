-- wrk script: GET with fixed headers; print a JSON summary when done (as post.lua).
-- Usage: wrk ... -s bench/get.lua URL -- [HEADER VALUE]...

function init(args)
   wrk.method = "GET"
   for i = 1, #args, 2 do
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
