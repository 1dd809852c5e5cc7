// Exercise the server with the official TypeScript SDK 1.x (@modelcontextprotocol/sdk), legacy era.
//
// Usage: node client_legacy.mjs URL PROTOCOL_VERSION     (2025-03-26 | 2025-06-18 | 2025-11-25)
// Prints one JSON line (see common.mjs) and exits 0, or prints {"ok": false, "error": ...} and exits 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

import { progressRecorder, recordingFetch, runMain, textOf } from './common.mjs';

const [url, version] = process.argv.slice(2);
if (!url || !version) {
  console.error('usage: node client_legacy.mjs URL PROTOCOL_VERSION');
  process.exit(2);
}

runMain(async () => {
  const wire = recordingFetch();
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: wire.fetch });
  // SDK 1.x always offers its LATEST_PROTOCOL_VERSION (2025-11-25) in initialize; rewrite the request on its
  // way out to offer the version under test. The SDK accepts any answer in its SUPPORTED_PROTOCOL_VERSIONS.
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (message?.method === 'initialize') {
      message = { ...message, params: { ...message.params, protocolVersion: version } };
    }
    return send(message, options);
  };

  const client = new Client({ name: 'e2e-ts-sdk-1x', version: '0.0.0' }, { capabilities: {} });
  await client.connect(transport);
  const negotiated = transport.protocolVersion;
  const sessionId = transport.sessionId;

  // Every page of tools/list: SDK 1.x returns one page per call.
  const tools = [];
  let pages = 0;
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    pages += 1;
    tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages < 100);

  const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  const add = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
  const progress = progressRecorder();
  // With onprogress set the SDK adds params._meta.progressToken itself.
  const withProgress = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, CallToolResultSchema, {
    onprogress: progress.onprogress,
  });
  const failing = await client.callTool({ name: 'test_error_handling', arguments: {} });
  const weather = await client.callTool({ name: 'get_weather', arguments: { city: 'Paris' } });

  // Requests after initialize must carry the session id and (06-18+) MCP-Protocol-Version.
  const afterInit = wire.exchanges.filter((e) => e.http === 'POST' && !e.rpc.includes('initialize'));
  const headerVersions = [...new Set(afterInit.map((e) => e.headers['mcp-protocol-version'] ?? null))];
  const allHaveSession = afterInit.every((e) => e.headers['mcp-session-id'] === sessionId);

  // End the session (DELETE with Mcp-Session-Id), then check that the id is dead (H-14: 404).
  await transport.terminateSession();
  const deleteStatus = wire.exchanges.findLast((e) => e.http === 'DELETE')?.status ?? null;
  await client.close();
  const afterDelete = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': negotiated,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} }),
  });
  await afterDelete.body?.cancel();

  return {
    client: '@modelcontextprotocol/sdk',
    requested: version,
    negotiated,
    session_id: sessionId ?? null,
    server_info: client.getServerVersion() ?? null,
    tools,
    pages,
    echo: { text: textOf(echo), is_error: echo.isError ?? false },
    add: { structured: add.structuredContent ?? null, text: textOf(add) },
    progress: { values: progress.values, text: textOf(withProgress), is_error: withProgress.isError ?? false },
    error_tool: { is_error: failing.isError ?? false, text: textOf(failing) },
    weather: { structured: weather.structuredContent ?? null, is_error: weather.isError ?? false },
    header_versions: headerVersions,
    all_requests_have_session: allHaveSession,
    delete_status: deleteStatus,
    after_delete_status: afterDelete.status,
  };
});
