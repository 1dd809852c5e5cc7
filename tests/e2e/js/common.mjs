// Helpers shared by client_legacy.mjs and client_modern.mjs.
//
// Protocol: the scripts print exactly one JSON object on the LAST line of stdout ({"ok": true, ...} or
// {"ok": false, "error": ...}) and exit 0 / 1. Anything the SDKs log goes to stderr.

for (const level of ['log', 'info', 'debug']) {
  // SDK 2.x reports some conditions with console.debug; keep stdout for the result line.
  console[level] = (...args) => console.error(...args);
}

/**
 * A fetch that records every HTTP exchange: method, the JSON-RPC method(s) of the body, the MCP request
 * headers (lower-cased names) and the response status.
 */
export function recordingFetch() {
  const exchanges = [];
  const wrapped = async (input, init = {}) => {
    const headers = new Headers(init.headers ?? {});
    const entry = { http: init.method ?? 'GET', rpc: [], headers: {} };
    for (const [name, value] of headers) {
      if (name.startsWith('mcp-')) entry.headers[name] = value;
    }
    if (typeof init.body === 'string') {
      try {
        const body = JSON.parse(init.body);
        entry.rpc = (Array.isArray(body) ? body : [body]).map((m) => m.method ?? (m.error ? 'error' : 'response'));
      } catch {
        entry.rpc = ['<unparsable>'];
      }
    }
    exchanges.push(entry);
    const response = await fetch(input, init);
    entry.status = response.status;
    return response;
  };
  return { fetch: wrapped, exchanges };
}

/** Collect the `progress` values of notifications/progress for one call. */
export function progressRecorder() {
  const values = [];
  return { values, onprogress: (p) => values.push(p.progress) };
}

export function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

/** Run `main`, print its result (or the error) as the last stdout line, and exit. */
export async function runMain(main) {
  const timer = setTimeout(() => {
    process.stdout.write(JSON.stringify({ ok: false, error: 'client script timed out after 90 s' }) + '\n');
    process.exit(1);
  }, 90_000);
  try {
    const result = await main();
    clearTimeout(timer);
    process.stdout.write(JSON.stringify({ ok: true, ...result }) + '\n');
    process.exit(0);
  } catch (err) {
    clearTimeout(timer);
    console.error(err);
    const detail = { ok: false, error: String(err?.stack ?? err) };
    if (err?.code !== undefined) detail.code = err.code;
    if (err?.data !== undefined) detail.data = err.data;
    process.stdout.write(JSON.stringify(detail) + '\n');
    process.exit(1);
  }
}
