// Preload for the multi-host test (tests/e2e/test_scale.py): `node --import ./random_host.mjs SCRIPT ...`
// runs an unchanged client script with every HTTP request sent to a web host picked at random.
//
// MCP_SCALE_HOSTS is a comma-separated list of origins (http://198.18.N.11:8000,...). A request to any of
// them goes to one of them picked at random, for each request: Node's fetch pools connections per origin,
// so a connection never carries requests for two hosts. The SDKs call the global fetch, which this wraps.
// MCP_SCALE_SEED (an integer) seeds the choice, so a run can be replayed. On exit, one line
// `random-host {"counts": {"origin": count, ...}, "sessions": [...]}` on stderr says where the requests went
// and which Mcp-Session-Id values they carried.
const hosts = (process.env.MCP_SCALE_HOSTS ?? '').split(',').filter(Boolean);
let state = Number(process.env.MCP_SCALE_SEED ?? Date.now()) >>> 0;
function random() {
  // mulberry32: a small seeded generator, plenty for picking hosts.
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const counts = Object.fromEntries(hosts.map((h) => [h, 0]));
const sessions = new Set();
const original = globalThis.fetch;

globalThis.fetch = (input, init) => {
  const isRequest = typeof Request !== 'undefined' && input instanceof Request;
  const url = new URL(isRequest ? input.url : String(input));
  if (hosts.includes(url.origin)) {
    const pick = hosts[Math.floor(random() * hosts.length)];
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
