/* Generated views of model toolsets (mcp_tools.contrib.drf, ModelToolset.ui): a table for list_*,
   a detail and a form for get_/create_/update_*, built from the tool's schemas; every interaction
   calls the tool again through the host (window.mcpApp.callTool, MCP Apps tools/call). */
(function () {
  "use strict";
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }
  function show(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }
  function label(name, schema) {
    // The serializer's label leads its description ("Title. ..."); otherwise the field's name.
    var first = ((schema && schema.description) || "").split(".")[0];
    var plain = name.replace(/_/g, " ");
    if (first && first.toLowerCase() === plain.toLowerCase()) return first;
    return plain.charAt(0).toUpperCase() + plain.slice(1);
  }
  function status(root, text, error) {
    var s = root.querySelector(".mcp-status");
    s.textContent = text || "";
    s.className = "mcp-status" + (error ? " mcp-error" : "");
  }
  function resultText(result) {
    return ((result && result.content) || []).filter(function (b) { return b.type === "text"; })
      .map(function (b) { return b.text; }).join("\n");
  }

  /* ---------------------------------------------------------------- list_<model> */
  function listView(root, tool) {
    var rowSchema = ((tool.output_schema.properties || {}).items || {}).items || {};
    var columns = Object.keys(rowSchema.properties || {});
    var inputs = tool.input_schema.properties || {};
    var orderable = {};
    (((inputs.order_by || {}).items || {}).enum || []).forEach(function (k) { if (k[0] !== "-") orderable[k] = true; });
    var filterFields = ((inputs.filter || {}).properties) || {};
    var args = {};
    var nextCursor = null;

    function call(newArgs) {
      args = newArgs;
      status(root, "Loading…");
      return window.mcpApp.callTool(tool.name, args).then(render, function (err) {
        status(root, (err && err.message) || "The call failed", true);
      });
    }
    function sortKey() { return (args.order_by || [])[0] || ""; }
    function render(result) {
      if (!result || result.isError) { status(root, resultText(result) || "The call failed", true); return; }
      var data = result.structuredContent || {};
      nextCursor = data.next_cursor || null;
      var current = sortKey();
      var head = el("tr", {}, columns.map(function (c) {
        if (!orderable[c]) return el("th", { text: label(c, rowSchema.properties[c]) });
        var mark = current === c ? " ▲" : current === "-" + c ? " ▼" : "";
        return el("th", {}, [el("button", {
          type: "button", "data-sort": c, text: label(c, rowSchema.properties[c]) + mark,
          onclick: function () {
            var order = current === c ? "-" + c : c;
            var next = Object.assign({}, args, { order_by: [order] });
            delete next.cursor;
            call(next);
          },
        })]);
      }));
      var body = (data.items || []).map(function (row) {
        return el("tr", {}, columns.map(function (c) { return el("td", { "data-column": c, text: show(row[c]) }); }));
      });
      var table = root.querySelector("table");
      table.replaceChildren(el("thead", {}, [head]), el("tbody", {}, body));
      root.querySelector(".mcp-next").disabled = !nextCursor;
      var total = typeof data.total === "number" ? " of " + data.total : "";
      status(root, (data.items || []).length + " row(s)" + total + (args.cursor ? " (a later page)" : ""));
      window.mcpApp.reportSize();
    }
    var filters = Object.keys(filterFields).map(function (name) {
      var ops = Object.keys(filterFields[name].properties || {});
      var op = ops.indexOf("icontains") >= 0 ? "icontains" : ops.indexOf("exact") >= 0 ? "exact" : ops[0];
      var spec = (filterFields[name].properties || {})[op] || {};
      if (!op || spec.type === "array") return null;
      // A yes/no field is a choice of three (any, yes, no): a checkbox cannot say "any".
      var choices = spec.enum ? spec.enum.map(function (v) { return [v, v]; })
        : spec.type === "boolean" ? [["true", "yes"], ["false", "no"]] : null;
      var input = choices ? el("select", { name: name, "data-op": op }, [el("option", { value: "", text: "any" })]
        .concat(choices.map(function (c) { return el("option", { value: c[0], text: c[1] }); })))
        : el("input", { name: name, "data-op": op, type: spec.type === "integer" ? "number" : spec.format === "date" ? "date" : "text" });
      input._spec = spec;
      return el("label", {}, [document.createTextNode(name.replace(/_/g, " ") + " (" + op + ") "), input]);
    }).filter(Boolean);
    // Buttons, not form submission: a view's sandbox may lack allow-forms (no submit event then).
    function applyFilters() {
      var filter = {};
      form.querySelectorAll("[data-op]").forEach(function (input) {
        if (input.value === "") return;
        var value = input._spec.type === "integer" ? parseInt(input.value, 10) : input._spec.type === "boolean" ? input.value === "true" : input.value;
        filter[input.name] = {}; filter[input.name][input.getAttribute("data-op")] = value;
      });
      var next = Object.assign({}, args);
      delete next.cursor;
      if (Object.keys(filter).length) next.filter = filter; else delete next.filter;
      call(next);
    }
    var form = el("div", { class: "mcp-filters", onkeydown: function (event) {
      if (event.key === "Enter") { event.preventDefault(); applyFilters(); }
    } }, filters.concat(filters.length ? [el("button", { type: "button", class: "mcp-filter", text: "Filter", onclick: applyFilters })] : []));
    root.replaceChildren(
      form,
      el("table", { class: "mcp-table" }),
      el("p", {}, [el("button", { type: "button", class: "mcp-next", disabled: "disabled", text: "Next page",
        onclick: function () { if (nextCursor) call(Object.assign({}, args, { cursor: nextCursor })); } })]),
      el("p", { class: "mcp-status", role: "status" })
    );
    window.mcpApp.on("toolinput", function (input) { args = Object.assign({}, input || {}); });
    window.mcpApp.on("toolresult", render);
  }

  /* ---------------------------------------------------------------- get/create/update_<model> */
  function detail(target, data, schema) {
    var props = (schema && schema.properties) || {};
    var rows = Object.keys(data || {}).map(function (k) {
      return el("tr", {}, [el("th", { text: label(k, props[k]) }), el("td", { "data-field": k, text: show(data[k]) })]);
    });
    target.replaceChildren(el("table", { class: "mcp-detail" }, [el("tbody", {}, rows)]));
  }
  function fieldInput(name, spec) {
    var type = Array.isArray(spec.type) ? spec.type.filter(function (t) { return t !== "null"; })[0] : spec.type;
    if (spec.enum) {
      return el("select", { name: name }, [el("option", { value: "", text: "—" })]
        .concat(spec.enum.map(function (v) { return el("option", { value: v, text: v }); })));
    }
    if (type === "boolean") return el("input", { name: name, type: "checkbox" });
    if (type === "integer" || type === "number") return el("input", { name: name, type: "number", step: type === "integer" ? "1" : "any" });
    if (type === "array") return el("input", { name: name, type: "text", placeholder: "comma-separated" });
    return el("input", { name: name, type: spec.format === "date" ? "date" : "text" });
  }
  function readField(input, spec) {
    var type = Array.isArray(spec.type) ? spec.type.filter(function (t) { return t !== "null"; })[0] : spec.type;
    if (type === "boolean") return input.checked;
    if (input.value === "") return undefined;
    if (type === "integer") return parseInt(input.value, 10);
    if (type === "number") return Number(input.value);
    if (type === "array") {
      var item = (spec.items || {}).type;
      return input.value.split(",").map(function (s) { return s.trim(); }).filter(Boolean)
        .map(function (s) { return item === "integer" ? parseInt(s, 10) : s; });
    }
    return input.value;
  }
  function writeField(input, spec, value) {
    if (value === undefined || value === null) return;
    if (input.type === "checkbox") input.checked = !!value;
    else input.value = Array.isArray(value) ? value.join(", ") : String(value);
  }
  function formView(root, tool, editable) {
    var props = tool.input_schema.properties || {};
    var required = tool.input_schema.required || [];
    var names = Object.keys(props);
    var shown = el("div", { class: "mcp-result" });
    var rows = names.map(function (name) {
      var input = fieldInput(name, props[name]);
      input.id = "f-" + name;
      return el("div", { class: "mcp-field", "data-field": name }, [
        el("label", { for: input.id, text: label(name, props[name]) + (required.indexOf(name) >= 0 ? " *" : "") }),
        input,
        el("span", { class: "mcp-error mcp-field-error" }),
      ]);
    });
    function fill(values) {
      names.forEach(function (name) {
        var input = root.querySelector('[name="' + name + '"]');
        if (values && name in values) writeField(input, props[name], values[name]);
      });
    }
    function errors(map) {
      root.querySelectorAll(".mcp-field-error").forEach(function (s) { s.textContent = ""; });
      var rest = [];
      Object.keys(map || {}).forEach(function (name) {
        var messages = [].concat(map[name]).map(show).join(" ");
        var holder = root.querySelector('.mcp-field[data-field="' + name + '"] .mcp-field-error');
        if (holder) holder.textContent = messages; else rest.push(name + ": " + messages);
      });
      return rest.join("; ");
    }
    function render(result) {
      var data = (result && result.structuredContent) || {};
      if (result && result.isError) {
        var rest = errors(data.errors);
        status(root, rest || resultText(result) || "Not saved: see the fields.", true);
        return;
      }
      errors({});
      detail(shown, data, tool.output_schema);
      if (editable) fill(data);
      status(root, editable ? "Saved." : "");
      window.mcpApp.reportSize();
    }
    function submit() {
      var values = {};
      names.forEach(function (name) {
        var value = readField(root.querySelector('[name="' + name + '"]'), props[name]);
        if (value !== undefined) values[name] = value;
      });
      status(root, "Saving…");
      window.mcpApp.callTool(tool.name, values).then(render, function (err) {
        status(root, (err && err.message) || "The call failed", true);
      });
    }
    var form = el("div", { class: "mcp-form", onkeydown: function (event) {
      if (event.key === "Enter" && event.target.tagName === "INPUT") { event.preventDefault(); submit(); }
    } }, rows.concat([el("button", { type: "button", class: "mcp-submit", text: tool.title || "Submit", onclick: submit })]));
    root.replaceChildren(shown, editable ? form : null, el("p", { class: "mcp-status", role: "status" }));
    window.mcpApp.on("toolinput", fill);
    window.mcpApp.on("toolresult", render);
  }

  window.mcpViews = {
    list: listView,
    detail: function (root, tool) { formView(root, tool, false); },
    form: function (root, tool) { formView(root, tool, true); },
  };
})();
