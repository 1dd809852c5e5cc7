// List and call one model tool (mcp_tools.contrib.drf) with an official TypeScript client and a bearer token.
//
// Usage: node client_model.mjs URL MODE TOKEN
//   MODE 2026-07-28: @modelcontextprotocol/client 2.x pinned to that version (stateless);
//   MODE 2025-xx-xx: @modelcontextprotocol/sdk 1.x through initialize, offering that version.
// Lists every tool (the client aggregates the pages), then calls list_book with a filter, an ordering and a
// limit. Prints one JSON line (see common.mjs) and exits 0, or prints {"ok": false, "error": ...} and exits 1.
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { recordingFetch, runMain, textOf } from './common.mjs';

const [url, mode, token] = process.argv.slice(2);
if (!url || !mode || !token) {
  console.error('usage: node client_model.mjs URL MODE TOKEN');
  process.exit(2);
}

runMain(async () => {
  const wire = recordingFetch();
  const requestInit = { headers: { authorization: `Bearer ${token}` } };
  let client;
  if (mode >= '2026-07-28') {
    client = new ModernClient(
      { name: 'e2e-ts-model-2x', version: '0.0.0' },
      { capabilities: {}, versionNegotiation: { mode: { pin: mode } } },
    );
    await client.connect(new ModernTransport(new URL(url), { fetch: wire.fetch, requestInit }));
  } else {
    const transport = new LegacyTransport(new URL(url), { fetch: wire.fetch, requestInit });
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (message?.method === 'initialize') {
        message = { ...message, params: { ...message.params, protocolVersion: mode } };
      }
      return send(message, options);
    };
    client = new LegacyClient({ name: 'e2e-ts-model-1x', version: '0.0.0' }, { capabilities: {} });
    await client.connect(transport);
  }

  // SDK 1.x returns one page per call; walk them all (2.x aggregates them when called without a cursor).
  const tools = [];
  let cursor;
  let pages = 0;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
    pages += 1;
  } while (cursor !== undefined && pages < 100);
  const listBook = tools.find((t) => t.name === 'list_book') ?? null;

  const page = await client.callTool({
    name: 'list_book',
    arguments: { filter: { genre: { exact: 'poetry' } }, order_by: ['-price'], limit: 5, include_total: true },
  });
  // A filter outside the allowlist: an isError result on 2025-11-25 and later, -32602 before (as for any
  // arguments the input schema refuses).
  let refused;
  try {
    const answer = await client.callTool({ name: 'list_book', arguments: { filter: { owner: { exact: 1 } } } });
    refused = { is_error: answer.isError ?? false, text: textOf(answer), code: null };
  } catch (err) {
    refused = { is_error: false, text: String(err?.message ?? err), code: err?.code ?? null };
  }

  const result = {
    negotiated: mode >= '2026-07-28' ? client.getNegotiatedProtocolVersion() ?? null : null,
    tools: tools.map((t) => t.name).sort(),
    list_book: listBook && {
      annotations: listBook.annotations ?? null,
      input_properties: Object.keys(listBook.inputSchema?.properties ?? {}).sort(),
      output_properties: Object.keys(listBook.outputSchema?.properties ?? {}).sort(),
    },
    page: { structured: page.structuredContent ?? null, is_error: page.isError ?? false, text: textOf(page) },
    refused,
    authorized: wire.exchanges.length > 0,
  };
  await client.close();
  return result;
});
