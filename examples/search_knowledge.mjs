#!/usr/bin/env node
// Search a site's published knowledge chunks through Supabase's REST API (PostgREST), as a tutor
// project would: POST {SUPABASE_URL}/rest/v1/rpc/search_knowledge with the anon key. Node 18+, no
// dependencies (plain fetch). Copy it; `searchKnowledge` is the part to keep.
//
//   SUPABASE_URL=https://xyz.supabase.co SUPABASE_ANON_KEY=eyJ... \
//     node examples/search_knowledge.mjs "たすきがけ" --site-url https://owner.github.io
//
// With @supabase/supabase-js the same call is:
//
//   const { data, error } = await supabase.rpc("search_knowledge", {
//     query_text: "たすきがけ", query_embedding: vector /* optional: number[] */, match_count: 5,
//   });
//
// Without an embedding the database's lexical channel answers alone (bigrams, kana readings, romaji);
// with one (a number[] from the same model the site was built with, e.g. multilingual-e5-small with
// the "query: " prefix) it fuses that with the dense ranking. pgvector reads a JSON array as a vector.

import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const HELP = `Usage: node search_knowledge.mjs QUERY [options]

Searches the knowledge chunks published to Supabase (the search_knowledge RPC).

Environment:
  SUPABASE_URL        the project URL, e.g. https://xyz.supabase.co
  SUPABASE_ANON_KEY   the project's anon (public) key

Options:
  --count N           how many results (default 5)
  --embedding FILE    the query's embedding: a JSON array of numbers in FILE ("-": standard input)
  --site-url URL      the site's origin, to print absolute (percent-encoded) URLs, e.g. https://owner.github.io
  --type T, --category C, --material M, --level L   filters
  --timeout SECONDS   give up after this long (default 10)
  -h, --help          this help`;

class UsageError extends Error {}

/** Calls the RPC; returns its rows. Throws an Error whose message is one line on any failure. */
export async function searchKnowledge({ url, key, query, embedding = null, count = 5, filters = {}, timeoutMs = 10000 }) {
  const body = { query_text: query, match_count: count };
  if (embedding) body.query_embedding = embedding;
  for (const [name, value] of Object.entries(filters)) if (value) body[`filter_${name}`] = value;
  const endpoint = `${url.replace(/\/+$/, "")}/rest/v1/rpc/search_knowledge`;
  let response;
  try {
    response = await fetch(endpoint, {
      method: "POST",
      headers: { apikey: key, Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const why = err.name === "TimeoutError" ? `no answer in ${timeoutMs / 1000} s` : (err.cause?.code || err.cause?.message || err.message);
    throw new Error(`cannot reach ${endpoint}: ${why}`);
  }
  const text = await response.text();
  if (!response.ok) {
    // PostgREST's errors are {code, message, details, hint}
    let reason = text.trim().slice(0, 300) || response.statusText;
    try {
      const error = JSON.parse(text);
      reason = [error.code, error.message].filter(Boolean).join(" ") + (error.hint ? ` (hint: ${error.hint})` : "");
    } catch { /* not JSON: keep the text */ }
    throw new Error(`HTTP ${response.status} from ${endpoint}: ${reason}`);
  }
  return JSON.parse(text);
}

function readEmbedding(file) {
  let vector;
  try {
    vector = JSON.parse(readFileSync(file === "-" ? 0 : file, "utf8"));
  } catch (err) {
    throw new UsageError(`--embedding ${file}: ${err.code === "ENOENT" ? "no such file" : err.message}`);
  }
  if (!Array.isArray(vector) || vector.length === 0 || !vector.every(Number.isFinite)) {
    throw new UsageError(`--embedding ${file}: expected a JSON array of numbers`);
  }
  return vector;
}

function parse(argv) {
  const { values, positionals } = parseArgs({
    args: argv, allowPositionals: true,
    options: {
      count: { type: "string", default: "5" }, embedding: { type: "string" }, "site-url": { type: "string" },
      type: { type: "string" }, category: { type: "string" }, material: { type: "string" }, level: { type: "string" },
      timeout: { type: "string", default: "10" }, help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return { help: true };
  const query = positionals.join(" ").trim();
  if (!query) throw new UsageError("give a query, e.g. node search_knowledge.mjs \"たすきがけ\" (--help for more)");
  const count = Number(values.count), timeout = Number(values.timeout);
  if (!Number.isInteger(count) || count < 1) throw new UsageError(`--count must be a whole number ≥ 1, got ${values.count}`);
  if (!(timeout > 0)) throw new UsageError(`--timeout must be a number of seconds > 0, got ${values.timeout}`);
  const siteUrl = values["site-url"];
  if (siteUrl) {
    try { new URL(siteUrl); } catch { throw new UsageError(`--site-url must be an absolute URL such as https://owner.github.io, got ${siteUrl}`); }
  }
  for (const name of ["SUPABASE_URL", "SUPABASE_ANON_KEY"]) {
    if (!process.env[name]) throw new UsageError(`set ${name} (Supabase dashboard › Project Settings › API)`);
  }
  return {
    url: process.env.SUPABASE_URL, key: process.env.SUPABASE_ANON_KEY, query, count, timeoutMs: timeout * 1000,
    embedding: values.embedding ? readEmbedding(values.embedding) : null, siteUrl,
    filters: { type: values.type, category: values.category, material: values.material, level: values.level },
  };
}

function print(rows, siteUrl) {
  if (rows.length === 0) return console.log("No results.");
  rows.forEach((row, i) => {
    const url = siteUrl ? new URL(row.url, siteUrl).href : row.url;
    const judged = row.relevant ? "relevant" : "not relevant";
    console.log(`${i + 1}. ${row.title}  [${row.type}, relevance ${Number(row.relevance).toFixed(2)}, ${judged}]`);
    console.log(`   ${url}`);
    for (const item of row.learns ?? []) console.log(`   - ${item}`);
  });
}

async function main() {
  try {
    const options = parse(process.argv.slice(2));
    if (options.help) return console.log(HELP);
    print(await searchKnowledge(options), options.siteUrl);
  } catch (err) {
    console.error(`error: ${err.message}`);
    process.exitCode = err instanceof UsageError || err.code?.startsWith("ERR_PARSE_ARGS") ? 2 : 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
