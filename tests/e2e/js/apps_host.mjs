// A test MCP Apps host on the official packages, bundled for the browser by build_apps_host.mjs:
// an MCP client (@modelcontextprotocol/sdk) declares io.modelcontextprotocol/ui, finds the
// tool's ui:// resource, reads it, calls the tool, and mounts the view in a sandboxed iframe
// with the CSP built from its _meta.ui; AppBridge (@modelcontextprotocol/ext-apps) completes
// ui/initialize, sends tool-input and tool-result, and proxies the view's tools/call to the server.
// Configuration in the page's hash: mcp (endpoint URL), token, tool, args (JSON).
import {
  AppBridge,
  PostMessageTransport,
  buildAllowAttribute,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const UI = "io.modelcontextprotocol/ui";
const HOST = { name: "ext-apps-test-host", version: "1.0.0" };

function log(text) {
  const li = document.createElement("li");
  li.textContent = text;
  document.getElementById("log").appendChild(li);
}

// The extension's "CSP Construction from Metadata", verbatim in its directives.
function contentSecurityPolicy(csp) {
  const list = (key) => (csp && csp[key] && csp[key].length ? " " + csp[key].join(" ") : "");
  const resources = list("resourceDomains");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline'${resources}`,
    `style-src 'self' 'unsafe-inline'${resources}`,
    `connect-src 'self'${list("connectDomains")}`,
    `img-src 'self' data:${resources}`,
    `font-src 'self'${resources}`,
    `media-src 'self' data:${resources}`,
    `frame-src ${list("frameDomains").trim() || "'none'"}`,
    "object-src 'none'",
    `base-uri ${list("baseUriDomains").trim() || "'self'"}`,
  ].join("; ");
}

async function main() {
  const config = new URLSearchParams(location.hash.slice(1));
  const client = new Client(HOST, {
    capabilities: { extensions: { [UI]: { mimeTypes: ["text/html;profile=mcp-app"] } } },
  });
  const transport = new StreamableHTTPClientTransport(new URL(config.get("mcp")), {
    requestInit: { headers: { Authorization: `Bearer ${config.get("token")}` } },
  });
  await client.connect(transport);
  const serverUi = client.getServerCapabilities()?.extensions?.[UI];
  document.body.dataset.serverUi = JSON.stringify(serverUi ?? null);
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === config.get("tool"));
  const uri = getToolUiResourceUri(tool);
  log(`tool ${tool.name}: ${uri}`);
  const read = await client.readResource({ uri });
  const content = read.contents[0];
  const meta = content._meta?.ui;
  const args = JSON.parse(config.get("args") || "{}");
  const result = await client.callTool({ name: tool.name, arguments: args });
  log(`tools/call ${tool.name}: isError=${Boolean(result.isError)}`);

  const policy = contentSecurityPolicy(meta?.csp);
  document.body.dataset.csp = policy;
  const iframe = document.createElement("iframe");
  iframe.id = "view";
  iframe.setAttribute("sandbox", "allow-scripts");
  const allow = buildAllowAttribute(meta?.permissions);
  if (allow) iframe.setAttribute("allow", allow);
  iframe.srcdoc = content.text.replace(
    /<head[^>]*>/i,
    (head) => `${head}<meta http-equiv="Content-Security-Policy" content="${policy}">`,
  );
  iframe.style.cssText = "width: 100%; height: 520px; border: 1px solid #ccc";
  document.body.appendChild(iframe);

  const bridge = new AppBridge(client, HOST, { serverTools: {}, openLinks: {}, logging: {} });
  bridge.oninitialized = async () => {
    log("ui/notifications/initialized");
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
    document.body.dataset.state = "sent";
    log("tool-input and tool-result sent");
  };
  bridge.addEventListener("sizechange", ({ height }) => {
    if (height) iframe.style.height = `${Math.min(Math.max(height, 200), 1400)}px`;
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  document.body.dataset.connected = "1";
}

main().catch((error) => {
  document.body.dataset.error = String(error && error.stack ? error.stack : error);
  log(`error: ${error}`);
});
