// Exercise the server with the official TypeScript client 2.x (@modelcontextprotocol/client).
//
// Usage: node client_modern.mjs URL MODE
//   MODE 2026-07-28 (or later): pin that version (stateless, no initialize);
//   MODE auto: let the client probe with server/discover and fall back to initialize;
//   MODE 2025-xx-xx: legacy initialize offering that version.
// Prints one JSON line (see common.mjs) and exits 0, or prints {"ok": false, "error": ...} and exits 1.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { progressRecorder, recordingFetch, runMain, textOf } from './common.mjs';

const [url, mode] = process.argv.slice(2);
if (!url || !mode) {
  console.error('usage: node client_modern.mjs URL MODE');
  process.exit(2);
}

runMain(async () => {
  const options = { capabilities: {} };
  if (mode === 'auto') options.versionNegotiation = { mode: 'auto' };
  else if (mode >= '2026-07-28') options.versionNegotiation = { mode: { pin: mode } };
  else options.supportedProtocolVersions = [mode];
  const client = new Client({ name: 'e2e-ts-client-2x', version: '0.0.0' }, options);
  const wire = recordingFetch();
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: wire.fetch }));

  // Walk the pages by hand with raw tools/list requests (client.listTools() without a cursor would
  // aggregate them all in one call)...
  const tools = [];
  let pages = 0;
  let cursor;
  do {
    const page = await client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } });
    pages += 1;
    tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages < 100);
  // ...then let the client aggregate them itself: only this path fills its tool cache, the source of the
  // output-schema validation and of the Mcp-Param-* headers it mirrors from x-mcp-header (SEP-2243).
  const aggregated = (await client.listTools()).tools.map((t) => t.name);

  const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  const add = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
  const progress = progressRecorder();
  const withProgress = await client.callTool(
    { name: 'test_tool_with_progress', arguments: {} },
    { onprogress: progress.onprogress },
  );
  const failing = await client.callTool({ name: 'test_error_handling', arguments: {} });
  const weather = await client.callTool({ name: 'get_weather', arguments: { city: 'Paris' } });

  // The headers of the (last) tools/call POST for get_weather.
  const weatherCalls = wire.exchanges.filter(
    (e) => e.http === 'POST' && e.rpc.includes('tools/call') && e.headers['mcp-name'] === 'get_weather',
  );
  const posts = wire.exchanges.filter((e) => e.http === 'POST');
  const result = {
    client: '@modelcontextprotocol/client',
    requested: mode,
    negotiated: client.getNegotiatedProtocolVersion() ?? null,
    era: client.getProtocolEra() ?? null,
    server_info: client.getServerVersion() ?? null,
    tools,
    pages,
    aggregated_tools: aggregated,
    echo: { text: textOf(echo), is_error: echo.isError ?? false },
    add: { structured: add.structuredContent ?? null, text: textOf(add) },
    progress: { values: progress.values, text: textOf(withProgress), is_error: withProgress.isError ?? false },
    error_tool: { is_error: failing.isError ?? false, text: textOf(failing) },
    weather: { structured: weather.structuredContent ?? null, is_error: weather.isError ?? false },
    weather_call_headers: weatherCalls.map((e) => ({ ...e.headers, status: e.status })),
    rpc_methods: posts.flatMap((e) => e.rpc),
    session_ids_sent: posts.some((e) => e.headers['mcp-session-id'] !== undefined),
    http_methods: [...new Set(wire.exchanges.map((e) => e.http))],
  };
  await client.close();
  return result;
});
