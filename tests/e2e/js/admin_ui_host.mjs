// The admin's preview host (mcp_tools/static/mcp_tools/ui_host.js is this file bundled by
// build_admin_ui_host.mjs with the esbuild pinned in package-lock.json): the official
// @modelcontextprotocol/ext-apps AppBridge drives a tool's view in a sandboxed iframe and feeds
// it a Try it call's arguments and result. A tools/call the view sends acts for no one by itself
// (issue 32): a tool the view does not declare is refused at once, and a declared one is shown to
// the person viewing the page (tool and arguments) and becomes a Try it call only when they
// confirm it; one call waits at a time, and nothing runs when the page loads.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const HOST = { name: "mcp_tools admin preview", version: "1.0.0" };
// A click that lands within this long of a call being shown is not taken as a decision: the view
// chooses when to ask, and could time it for a click meant for something else.
const ARM_MS = 600;
const LOG_LINES = 200; // a view asking again and again does not grow the page without end

function asker(holder, config) {
  const box = holder.querySelector(".mcp-ui-ask");
  const idle = box.querySelector(".mcp-ui-ask-idle");
  const call = box.querySelector(".mcp-ui-ask-call");
  const run = box.querySelector(".mcp-ui-run");
  const refuse = box.querySelector(".mcp-ui-refuse");
  const send = box.querySelector(".mcp-ui-ask-send");
  let waiting = null;

  function settle(answer) {
    if (!waiting) return;
    const resolve = waiting;
    waiting = null;
    call.hidden = true;
    idle.hidden = false;
    run.disabled = true;
    delete holder.dataset.asking;
    resolve(answer);
  }
  run.addEventListener("click", () => settle(true));
  refuse.addEventListener("click", () => settle(false));
  window.addEventListener("pagehide", () => settle(false));

  // Shows the call and resolves with the person's decision; null while another call waits.
  return (name, args) => {
    if (waiting) return null;
    box.querySelector(".mcp-ui-ask-tool").textContent = name;
    box.querySelector(".mcp-ui-ask-user").textContent = config.user || "you";
    box.querySelector(".mcp-ui-ask-args").textContent = JSON.stringify(args, null, 2);
    const origins = config.connectDomains || [];
    send.hidden = origins.length === 0;
    send.textContent = origins.length ? `The view may send what the call returns to: ${origins.join(", ")}.` : "";
    idle.hidden = true;
    call.hidden = false;
    run.disabled = true;
    holder.dataset.asking = name;
    const shown = new Promise((resolve) => { waiting = resolve; });
    setTimeout(() => { if (waiting) run.disabled = false; }, ARM_MS);
    return shown;
  };
}

function mount(holder) {
  const config = JSON.parse(document.getElementById(holder.dataset.config).textContent);
  const declared = new Set(config.tools || []);
  const ask = asker(holder, config);
  const log = holder.querySelector(".mcp-ui-log");
  const note = (text) => {
    const li = document.createElement("li");
    li.textContent = text;
    log.appendChild(li);
    while (log.childElementCount > LOG_LINES) log.firstElementChild.remove();
  };
  const frame = document.createElement("iframe");
  frame.id = holder.dataset.frameId || "mcp-ui-frame";
  frame.title = "The tool's view";
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("referrerpolicy", "no-referrer");
  if (config.allow) frame.setAttribute("allow", config.allow);
  frame.style.cssText = "width: 100%; min-height: 240px; border: 1px solid var(--hairline-color, #ccc); background: #fff";
  holder.insertBefore(frame, log);

  const context = config.tool ? { toolInfo: { tool: config.tool } } : {};
  const bridge = new AppBridge(null, HOST, { serverTools: {}, openLinks: {}, logging: {} }, { hostContext: context });
  bridge.oninitialized = async () => {
    note("ui/notifications/initialized");
    if (config.trial) {
      await bridge.sendToolInput({ arguments: config.trial.arguments || {} });
      await bridge.sendToolResult(config.trial.result);
      note("tool-input and tool-result sent");
    }
    holder.dataset.state = "ready";
  };
  bridge.oncalltool = async (params) => {
    const name = String(params.name);
    const args = params.arguments || {};
    if (!declared.has(name)) {
      note(`tools/call ${name} refused: the view does not declare it`);
      throw new Error(`The view does not declare the tool ${JSON.stringify(name)}: not called.`);
    }
    const decision = ask(name, args);
    if (decision === null) {
      note(`tools/call ${name} refused: another call is waiting for a decision`);
      throw new Error("Another call is waiting for the person's decision: not called.");
    }
    note(`tools/call ${name}: waiting for your decision`);
    if (!(await decision)) {
      note(`tools/call ${name}: refused by you`);
      throw new Error("The person viewing the preview refused the call: not called.");
    }
    note(`tools/call ${name}: confirmed, run as you`);
    const response = await fetch(config.callUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": config.csrf },
      body: JSON.stringify({ name, arguments: args, protocolVersion: config.protocolVersion }),
    });
    const answer = await response.json();
    if (answer.error) throw new Error(answer.error.message);
    return answer.result;
  };
  bridge.onopenlink = async ({ url }) => {
    note(`open link (not followed in the preview): ${url}`);
    return {};
  };
  bridge.onmessage = async () => ({});
  bridge.onupdatemodelcontext = async () => ({});
  bridge.addEventListener("sizechange", ({ height }) => {
    if (height) frame.style.height = `${Math.min(Math.max(height, 120), 2000)}px`;
  });
  // Listen before the view loads: it sends ui/initialize as soon as it runs.
  bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow)).then(() => {
    frame.src = config.src;
  });
}

document.querySelectorAll("[data-mcp-ui-host]").forEach(mount);
