// Bundles apps_host.mjs (the official ext-apps AppBridge and the SDK client) for the browser,
// with the esbuild pinned in package-lock.json: node build_apps_host.mjs <outfile>.
import { build } from "esbuild";

await build({
  entryPoints: [new URL("./apps_host.mjs", import.meta.url).pathname],
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "chrome120",
  outfile: process.argv[2],
  logLevel: "warning",
});
