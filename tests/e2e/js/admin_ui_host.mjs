// The admin's preview host (mcp_tools/static/mcp_tools/ui_host.js is this file bundled by
// build_admin_ui_host.mjs with the esbuild pinned in package-lock.json): the official
// @modelcontextprotocol/ext-apps AppBridge drives a tool's view in a sandboxed iframe, feeds it
// a Try it call's arguments and result, and answers the view's tools/call with Try it calls.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const HOST = { name: "mcp_tools admin preview", version: "1.0.0" };

function mount(holder) {
  const config = JSON.parse(document.getElementById(holder.dataset.config).textContent);
  const log = holder.querySelector(".mcp-ui-log");
  const note = (text) => {
    const li = document.createElement("li");
    li.textContent = text;
    log.appendChild(li);
  };
  const frame = document.createElement("iframe");
  frame.id = holder.dataset.frameId || "mcp-ui-frame";
  frame.title = "The tool's view";
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("referrerpolicy", "no-referrer");
  if (config.allow) frame.setAttribute("allow", config.allow);
  frame.style.cssText = "width: 100%; min-height: 240px; border: 1px solid var(--hairline-color, #ccc); background: #fff";
  holder.insertBefore(frame, log);

  const bridge = new AppBridge(null, HOST, { serverTools: {}, openLinks: {}, logging: {} });
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
    note(`tools/call ${params.name}`);
    const response = await fetch(config.callUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": config.csrf },
      body: JSON.stringify({ name: params.name, arguments: params.arguments || {}, protocolVersion: config.protocolVersion }),
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
