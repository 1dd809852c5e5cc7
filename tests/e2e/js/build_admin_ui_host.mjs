// Builds mcp_tools/static/mcp_tools/ui_host.js from admin_ui_host.mjs with the pinned esbuild:
// node build_admin_ui_host.mjs [outfile]. tests/e2e/test_apps_browser.py checks the committed
// file is what this builds.
import { build } from "esbuild";
import { readFileSync } from "node:fs";

const lock = JSON.parse(readFileSync(new URL("./package-lock.json", import.meta.url)));
const version = (name) => lock.packages[`node_modules/${name}`].version;
const outfile = process.argv[2] || new URL("../../../mcp_tools/static/mcp_tools/ui_host.js", import.meta.url).pathname;

await build({
  entryPoints: [new URL("./admin_ui_host.mjs", import.meta.url).pathname],
  bundle: true,
  minify: true,
  format: "iife",
  platform: "browser",
  target: "chrome120",
  legalComments: "eof",
  banner: {
    js:
      "/* mcp_tools admin preview host: tests/e2e/js/admin_ui_host.mjs bundled by build_admin_ui_host.mjs " +
      `(@modelcontextprotocol/ext-apps ${version("@modelcontextprotocol/ext-apps")}, ` +
      `@modelcontextprotocol/sdk ${version("@modelcontextprotocol/sdk")}, esbuild ${version("esbuild")}). */`,
  },
  outfile,
  logLevel: "warning",
});
