// The official MCP TypeScript SDK (the client MCP Inspector is built on) against a running gateway.
// tests/gateway/web/test_typescript_client.py runs it; by hand (after `npm ci` here):
//
//   HINDSIGHT_URL=http://127.0.0.1:8080/mcp HINDSIGHT_TOKEN=<token> node check.mjs calls|connect|rate-limit
//
// Every mode lists the tools first, as Inspector does, so the SDK caches their output schemas and validates the
// structured content of each later call. It prints one JSON line: what the SDK returned or threw at each step.
//   calls       write_memory then recall_memory (validated), then two tool errors: invalid_argument, not_found
//   connect     only connects: with a bad token the server answers 401 before any tool runs
//   rate-limit  calls whoami until the server answers 429 (run it as a subject with a tiny read limit)
import { randomUUID } from "node:crypto";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const MODES = ["calls", "connect", "rate-limit"];
const MAX_CALLS = 10; // the rate-limit mode gives up (and says so) if this many calls all pass

// What a caller can read off a thrown error: its class, code, data and message, and the JSON-RPC body our server
// sent with the refusal, which the SDK only keeps as text at the end of the message.
function thrown(error) {
  const message = String(error?.message ?? error);
  let body = null;
  const start = message.indexOf("{");
  if (start >= 0) {
    try {
      body = JSON.parse(message.slice(start));
    } catch {
      body = null;
    }
  }
  return { threw: error?.constructor?.name ?? typeof error, code: error?.code ?? null, data: error?.data ?? null, message, body };
}

// What a caller can read off a tool result: isError, whether structured content came, and our error (parsed from
// the text) when it is a tool error.
function answered(result) {
  const text = result.content?.find((part) => part.type === "text")?.text ?? null;
  let error = null;
  if (result.isError) {
    try {
      error = JSON.parse(text).error ?? null;
    } catch {
      error = null;
    }
  }
  return {
    isError: result.isError === true,
    hasStructuredContent: result.structuredContent !== undefined,
    structuredContent: result.structuredContent ?? null,
    error,
    text,
  };
}

async function step(run) {
  try {
    return answered(await run());
  } catch (error) {
    return thrown(error);
  }
}

async function main(mode) {
  const url = new URL(process.env.HINDSIGHT_URL ?? "http://127.0.0.1:8080/mcp");
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${process.env.HINDSIGHT_TOKEN ?? ""}` } },
  });
  const client = new Client({ name: "hindsight-ts-check", version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (error) {
    return { mode, connected: false, connect: thrown(error) };
  }
  try {
    const tools = (await client.listTools()).tools;
    const seen = { mode, connected: true, tools: tools.map((tool) => tool.name) };
    seen.withOutputSchema = tools.filter((tool) => tool.outputSchema).map((tool) => tool.name);
    if (mode === "calls") {
      const call = (name, args) => step(() => client.callTool({ name, arguments: args }));
      seen.write = await call("write_memory", { content: "The user's favourite editor is Helix" });
      seen.recall = await call("recall_memory", { query: "which editor does the user like?" });
      seen.invalid = await call("write_memory", { content: "The user drinks tea", importance: "high" });
      seen.notFound = await call("forget_memory", { id: randomUUID() });
    } else if (mode === "rate-limit") {
      seen.allowed = 0;
      for (let n = 0; n < MAX_CALLS && seen.refused === undefined; n++) {
        try {
          await client.callTool({ name: "whoami", arguments: {} });
          seen.allowed += 1;
        } catch (error) {
          seen.refused = thrown(error);
        }
      }
    }
    return seen;
  } finally {
    await client.close();
  }
}

const mode = process.argv[2];
if (!MODES.includes(mode)) {
  console.error(`usage: node check.mjs ${MODES.join("|")}`);
  process.exit(2);
}
console.log(JSON.stringify(await main(mode)));
