// Preload for the multi-host test (tests/e2e/test_scale.py): `node --import ./random_host.mjs SCRIPT ...`
// runs an unchanged client script with every HTTP request sent to a web host picked at random.
//
// MCP_SCALE_HOSTS is a comma-separated list of origins (http://198.18.N.11:8000,...). A request to any of
// them goes to one of them picked at random, for each request: Node's fetch pools connections per origin,
// so a connection never carries requests for two hosts. The SDKs call the global fetch, which this wraps.
// On exit, one line `random-host {"origin": count, ...}` on stderr says where the requests went.
const hosts = (process.env.MCP_SCALE_HOSTS ?? '').split(',').filter(Boolean);
const counts = Object.fromEntries(hosts.map((h) => [h, 0]));
const sessions = new Set();
const original = globalThis.fetch;

globalThis.fetch = (input, init) => {
  const isRequest = typeof Request !== 'undefined' && input instanceof Request;
  const url = new URL(isRequest ? input.url : String(input));
  if (hosts.includes(url.origin)) {
    const pick = hosts[Math.floor(Math.random() * hosts.length)];
    counts[pick] += 1;
    const target = new URL(url.pathname + url.search, pick);
    const session = new Headers(init?.headers ?? (isRequest ? input.headers : undefined)).get('mcp-session-id');
    if (session) sessions.add(session);
    input = isRequest ? new Request(target, input) : target;
  }
  return original(input, init);
};

process.on('exit', () => {
  process.stderr.write(`random-host ${JSON.stringify({ counts, sessions: [...sessions] })}\n`);
});
