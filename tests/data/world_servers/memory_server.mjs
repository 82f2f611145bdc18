// A stdio MCP server in Node.js, without the SDK, that calls process.memoryUsage() before every answer
// (issue 39): it cannot answer where /proc is missing. Run as `node memory_server.mjs ROOT`.
// Tools: search_docs(query) -> matching relative paths; read_doc(path) -> a file's text (relative path).
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

const root = fs.realpathSync(process.argv[2]);
const annotations = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };
const tools = [
  { name: "search_docs", description: "Search the project's files for a word; answers matching relative paths.",
    inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] }, annotations },
  { name: "read_doc", description: "Read one file of the project by its path relative to the project root.",
    inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }, annotations },
];

function files(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? files(full) : [path.relative(root, full)];
  });
}

function call(name, args) {
  if (name === "search_docs") {
    const query = String(args.query || "").toLowerCase();
    const hits = files(root).filter((rel) => fs.readFileSync(path.join(root, rel), "utf8").toLowerCase().includes(query));
    return { content: [{ type: "text", text: hits.join("\n") || "no match" }] };
  }
  if (name === "read_doc" && files(root).includes(String(args.path))) {
    return { content: [{ type: "text", text: fs.readFileSync(path.join(root, String(args.path)), "utf8") }] };
  }
  return { content: [{ type: "text", text: `no such file: ${args.path}` }], isError: true };
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const message = JSON.parse(line);
  const rss = process.memoryUsage().rss;  // reads /proc/self/statm: ENOENT without /proc
  if (message.id === undefined) return;
  let result;
  if (message.method === "initialize") {
    result = { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} },
               serverInfo: { name: "memory-docs", version: "1.0.0" } };
  } else if (message.method === "tools/list") {
    result = { tools };
  } else if (message.method === "tools/call") {
    result = call(message.params.name, message.params.arguments || {});
  } else if (message.method === "ping") {
    result = {};
  } else {
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: message.id,
                                          error: { code: -32601, message: "method not found" } }) + "\n");
    return;
  }
  process.stderr.write(`answered ${message.method} with rss ${rss}\n`);
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }) + "\n");
});
