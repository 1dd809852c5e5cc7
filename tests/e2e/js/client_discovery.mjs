// Progressive discovery with the official TypeScript clients: list the entry set, find a tool with
// search_tools, read its definition with describe_tools, then call it by name although it was not listed.
//
// Usage: node client_discovery.mjs URL MODE
//   MODE 2026-07-28: @modelcontextprotocol/client 2.x, pinned (stateless);
//   MODE 2025-11-25: @modelcontextprotocol/sdk 1.x, initialize.
// Prints one JSON line (see common.mjs) and exits 0, or prints {"ok": false, "error": ...} and exits 1.
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { runMain, textOf } from './common.mjs';

const [url, mode] = process.argv.slice(2);
if (!url || !mode) {
  console.error('usage: node client_discovery.mjs URL MODE');
  process.exit(2);
}

async function connect() {
  if (mode >= '2026-07-28') {
    const client = new ModernClient(
      { name: 'e2e-ts-discovery-2x', version: '0.0.0' },
      { capabilities: {}, versionNegotiation: { mode: { pin: mode } } },
    );
    await client.connect(new ModernTransport(new URL(url)));
    return client;
  }
  const client = new LegacyClient({ name: 'e2e-ts-discovery-1x', version: '0.0.0' }, { capabilities: {} });
  await client.connect(new LegacyTransport(new URL(url)));
  return client;
}

runMain(async () => {
  const client = await connect();
  const listed = (await client.listTools()).tools.map((t) => t.name);
  const search = await client.callTool({ name: 'search_tools', arguments: { query: 'add two numbers', limit: 3 } });
  const found = (search.structuredContent ?? JSON.parse(textOf(search))).tools;
  const described = await client.callTool({ name: 'describe_tools', arguments: { names: [found[0].name] } });
  const definition = (described.structuredContent ?? JSON.parse(textOf(described))).tools[0];
  const sum = await client.callTool({ name: found[0].name, arguments: { a: 20, b: 22 } });
  const result = {
    listed,
    found: found.map((t) => t.name),
    first: found[0],
    definition,
    sum: { structured: sum.structuredContent ?? null, text: textOf(sum), is_error: sum.isError ?? false },
  };
  await client.close();
  return result;
});
