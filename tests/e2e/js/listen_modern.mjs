// Wait for notifications/tools/list_changed on a 2026-07-28 subscriptions/listen stream opened by the
// official TypeScript client 2.x (ClientOptions.listChanged), then print the refreshed tool names.
//
// Usage: node listen_modern.mjs URL "X-Test-User header value" TIMEOUT_MS
// Prints {"ready": true} once the listen stream is acknowledged, then one JSON line with the outcome.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, user, timeoutMs] = process.argv.slice(2);

const changes = [];
let resolveChange;
const changed = new Promise((resolve) => {
  resolveChange = resolve;
});
const client = new Client(
  { name: 'e2e-ts-listener', version: '0.0.0' },
  {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    listChanged: {
      tools: {
        debounceMs: 0,
        onChanged: (error, tools) => {
          changes.push(error ? { error: String(error) } : { tools: (tools ?? []).map((t) => t.name) });
          resolveChange();
        },
      },
    },
  },
);
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { 'X-Test-User': user } } });
try {
  await client.connect(transport);
  const before = (await client.listTools()).tools.map((t) => t.name);
  // The auto-opened listen subscription is acknowledged asynchronously: wait for it.
  let sub = client.autoOpenedSubscription ?? null;
  for (let i = 0; i < 100 && !sub; i += 1) {
    await new Promise((r) => setTimeout(r, 50));
    sub = client.autoOpenedSubscription ?? null;
  }
  const honored = sub ? sub.honoredFilter : null;
  console.log(JSON.stringify({ ready: true, before, honored }));
  const timer = new Promise((resolve) => setTimeout(() => resolve('timeout'), Number(timeoutMs)));
  const outcome = await Promise.race([changed.then(() => 'changed'), timer]);
  console.log(JSON.stringify({ ok: true, outcome, changes, before }));
  await client.close();
  process.exit(0);
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String(error?.stack ?? error) }));
  process.exit(1);
}
