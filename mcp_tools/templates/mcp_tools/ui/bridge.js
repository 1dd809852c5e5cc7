/* mcp_tools app bridge: the View side of MCP Apps (io.modelcontextprotocol/ui, 2026-01-26),
   JSON-RPC 2.0 over postMessage with the host. Inlined into every ui:// document the server
   renders; hand-written, no dependencies. API: window.mcpApp (see docs/howto/apps.md). */
(function () {
  "use strict";
  var PROTOCOL = "2026-01-26";
  var host = window.parent;
  var nextId = 1;
  var pending = {};
  var handlers = { toolinput: [], toolresult: [], toolcancelled: [], hostcontext: [], teardown: [] };
  var app = { lastInput: null, lastResult: null, hostContext: null };

  function send(message) { host.postMessage(message, "*"); }
  function request(method, params) {
    var id = nextId++;
    return new Promise(function (resolve, reject) {
      pending[id] = { resolve: resolve, reject: reject };
      send({ jsonrpc: "2.0", id: id, method: method, params: params || {} });
    });
  }
  function notify(method, params) { send({ jsonrpc: "2.0", method: method, params: params || {} }); }
  function emit(name, value) {
    handlers[name].forEach(function (cb) { try { cb(value); } catch (err) { console.error(err); } });
  }
  function lookup(value, path) {
    var parts = path ? path.split(".") : [];
    for (var i = 0; i < parts.length; i++) {
      if (value === null || value === undefined) return undefined;
      value = value[parts[i]];
    }
    return value;
  }
  function bind(result) {
    var data = result && result.structuredContent;
    document.querySelectorAll("[data-mcp-text]").forEach(function (el) {
      var value = lookup(data, el.getAttribute("data-mcp-text"));
      el.textContent = value === undefined || value === null ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
    });
    document.querySelectorAll("[data-mcp-json]").forEach(function (el) {
      var value = lookup(data, el.getAttribute("data-mcp-json"));
      el.textContent = JSON.stringify(value === undefined ? null : value, null, 2);
    });
    document.querySelectorAll("[data-mcp-content]").forEach(function (el) {
      var blocks = (result && result.content) || [];
      el.textContent = blocks.filter(function (b) { return b.type === "text"; }).map(function (b) { return b.text; }).join("\n");
    });
    document.documentElement.setAttribute("data-mcp-state", result && result.isError ? "error" : "result");
  }
  /* The tool whose view this is, as the host tells it (hostContext.toolInfo.tool): a stored view is
     served as written, so this is where its name and title come from. */
  function bindTool(context) {
    var tool = context && context.toolInfo && context.toolInfo.tool;
    if (!tool) return;
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", function () { bindTool(context); });
      return;
    }
    document.querySelectorAll("[data-mcp-tool]").forEach(function (el) {
      var path = el.getAttribute("data-mcp-tool");
      var value = path === "title" ? tool.title || (tool.annotations && tool.annotations.title) || tool.name : lookup(tool, path);
      el.textContent = value === undefined || value === null ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
    });
  }
  function reportSize() {
    var el = document.documentElement;
    notify("ui/notifications/size-changed", { width: el.scrollWidth, height: el.scrollHeight });
  }

  window.addEventListener("message", function (event) {
    if (event.source !== host) return;
    var msg = event.data;
    if (!msg || msg.jsonrpc !== "2.0") return;
    if (msg.id !== undefined && msg.method === undefined) {
      var waiting = pending[msg.id];
      if (!waiting) return;
      delete pending[msg.id];
      if (msg.error) waiting.reject(msg.error); else waiting.resolve(msg.result);
      return;
    }
    var params = msg.params || {};
    switch (msg.method) {
      case "ui/notifications/tool-input":
        app.lastInput = params.arguments || {};
        emit("toolinput", app.lastInput);
        break;
      case "ui/notifications/tool-result":
        app.lastResult = params;
        bind(params);
        emit("toolresult", params);
        break;
      case "ui/notifications/tool-cancelled":
        emit("toolcancelled", params);
        break;
      case "ui/notifications/host-context-changed":
        app.hostContext = Object.assign({}, app.hostContext || {}, params);
        bindTool(app.hostContext);
        emit("hostcontext", app.hostContext);
        break;
      case "ui/resource-teardown":
        emit("teardown", params);
        send({ jsonrpc: "2.0", id: msg.id, result: {} });
        break;
      case "ping":
        send({ jsonrpc: "2.0", id: msg.id, result: {} });
        break;
      default:
        if (msg.id !== undefined) {
          send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } });
        }
    }
  });

  app.on = function (name, cb) { handlers[name].push(cb); return app; };
  /* tools/call through the host: resolves with the CallToolResult, rejects with a JSON-RPC error. */
  app.callTool = function (name, args) { return request("tools/call", { name: name, arguments: args || {} }); };
  app.openLink = function (url) { return request("ui/open-link", { url: url }); };
  app.sendMessage = function (text) {
    return request("ui/message", { role: "user", content: [{ type: "text", text: text }] });
  };
  app.reportSize = reportSize;
  app.bind = bind;
  app.ready = request("ui/initialize", {
    appInfo: { name: "mcp_tools", version: "1" },
    appCapabilities: {},
    protocolVersion: PROTOCOL,
  }).then(function (result) {
    app.hostContext = (result && result.hostContext) || {};
    notify("ui/notifications/initialized", {});
    bindTool(app.hostContext);
    emit("hostcontext", app.hostContext);
    if (window.ResizeObserver) new ResizeObserver(reportSize).observe(document.documentElement);
    else reportSize();
    return result;
  });
  window.mcpApp = app;
})();
