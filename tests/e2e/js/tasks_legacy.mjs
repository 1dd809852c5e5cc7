// The official TypeScript SDK 1.x task client (2025-11-25 core tasks) against a server with a Celery worker.
//
// Usage: node tasks_legacy.mjs URL
// Calls build_report as a task with client.experimental.tasks.callToolStream (create, poll, result),
// then lists tasks and reads the finished task. Prints one JSON line and exits 0, or {"ok": false}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url] = process.argv.slice(2);

try {
  const client = new Client(
    { name: 'e2e-ts-tasks', version: '0.0.0' },
    { capabilities: { tasks: { list: {}, cancel: {}, requests: {} } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const messages = [];
  const stream = client.experimental.tasks.callToolStream(
    { name: 'build_report', arguments: { steps: 2 } },
    undefined,
    { task: { ttl: 60000 }, timeout: 60000 },
  );
  for await (const message of stream) {
    messages.push(message);
  }
  const created = messages.find((m) => m.type === 'taskCreated');
  const final = messages[messages.length - 1];
  const taskId = created ? created.task.taskId : null;
  const listed = await client.experimental.tasks.listTasks();
  const task = taskId ? await client.experimental.tasks.getTask(taskId) : null;
  console.log(
    JSON.stringify({
      ok: true,
      negotiated: client.getServerCapabilities()?.tasks ? 'tasks' : null,
      types: messages.map((m) => m.type),
      statuses: messages.filter((m) => m.type === 'taskStatus').map((m) => m.task.status),
      task_id: taskId,
      final_type: final?.type ?? null,
      result_text: final?.type === 'result' ? (final.result.content ?? []).map((c) => c.text).join('\n') : null,
      error: final?.type === 'error' ? String(final.error) : null,
      listed_ids: listed.tasks.map((t) => t.taskId),
      task_status: task ? task.status : null,
    }),
  );
  await client.close();
  process.exit(0);
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String(error?.stack ?? error) }));
  process.exit(1);
}
