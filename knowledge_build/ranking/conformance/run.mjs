// The conformance corpus through the search box's own module (knowledge-search.js), under node: no browser.
// node run.mjs <module path> <bundle.json>: bundle.json holds what the bundle ships the box ({types, romaji});
// prints one JSON line per box case: {where, got}. tests/test_conformance_js.py compares them (ranking/conformance/__init__.py).
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [modulePath, bundlePath] = process.argv.slice(2);
const box = await import(pathToFileURL(modulePath).href);
const shipped = JSON.parse(readFileSync(bundlePath, "utf8"));
const here = dirname(fileURLToPath(import.meta.url));

const run = {
  romaji: (text) => box.romajiKana(text, shipped.romaji),
  fold: (text) => box.fold(text),
  numerals: (text) => box.fold(text),
  query_texts: (c) => box.queryTexts(c.query, c.thesaurus, c.english, shipped.romaji),
  type_weight: (c) => box.typeWeights(shipped.types, c.query)(shipped.types.findIndex((t) => t.value === c.type)),
  places: (c) => box.leadsByPlace(c.ranked, (item) => item[1], c.k).map((item) => item[0]),
  fusion: (c) => Object.fromEntries([...box.fuse(c.method, Object.fromEntries(Object.entries(c.channels)
    .map(([name, scores]) => [name, new Map(Object.entries(scores).map(([row, v]) => [Number(row), v]))])), c.weights, c.k)]
    .sort((a, b) => a[0] - b[0])),
  facet_defaults: (c) => box.facetDefaults(c.query, c.versions, c.languages, { version: c.version, language: c.language }),
};
const engines = JSON.parse(process.env.RULE_ENGINES);
for (const name of readdirSync(here).filter((n) => n.endsWith(".jsonl")).sort()) {
  readFileSync(join(here, name), "utf8").split("\n").forEach((line, i) => {
    if (!line.trim()) return;
    const c = JSON.parse(line);
    if (!engines[c.rule].includes("box")) return;
    let got;
    try { got = run[c.rule](c.input); } catch (error) { got = { error: String(error) }; }
    process.stdout.write(JSON.stringify({ where: `${name}:${i + 1}`, got }) + "\n");
  });
}
