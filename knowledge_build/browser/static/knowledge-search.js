// knowledge-search.js: the site's own search in the browser, from the bundle knowledge-build writes
// (knowledge-search.json and the files it names). No dependencies, no requests but to the bundle.
// The analysis is knowledge_build/browser/analysis.py rule for rule; the ranking is browser/search.py's.

const SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ";
const SCRIPTS = /[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ]+|[₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₙ]+/g;
const DIGITS = "〇一二三四五六七八九";
const UNITS = { "十": 10n, "百": 100n, "千": 1000n };
const MIN_READING = 3;

// text/ja.py's kanji_number: 二 -> 2, 十二 -> 12, 二百五 -> 205, a run of digits only positionally (二〇 -> 20).
function kanjiNumber(text) {
  const chars = [...text];
  if (chars.every((c) => DIGITS.includes(c))) {
    return BigInt(chars.map((c) => DIGITS.indexOf(c)).join("")).toString();
  }
  let total = 0n, digit = 0n;
  for (const c of chars) {
    if (DIGITS.includes(c)) digit = BigInt(DIGITS.indexOf(c));
    else { total += (digit || 1n) * UNITS[c]; digit = 0n; }
  }
  return (total + digit).toString();
}

export function fold(text) {
  let t = text.replace(SCRIPTS, (m) => (SUP.includes(m[0]) ? "^" : "_") + m.normalize("NFKC"));
  t = t.normalize("NFKC").toLowerCase();
  t = t.replace(/[〇一二三四五六七八九十百千]+/g, kanjiNumber);
  return t.replace(/[\u3041-\u3096]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0x60));
}

// The syllables of the romaji table the bundle ships (knowledge_build/data/romaji.json, text/romaji.py).
const spell = new WeakMap();
function syllables(t) {
  if (!spell.has(t)) {
    const out = {}, row = (r) => (r.includes(" ") ? r.split(" ") : [...r]);
    for (const [onset, kana] of Object.entries(t.rows)) row(kana).forEach((k, i) => { out[onset + t.vowels[i]] = k; });
    for (const [onset, kana] of Object.entries(t.contracted)) [...t.small].forEach((k, i) => { out[onset + t.vowels[i]] = kana + k; });
    spell.set(t, out);
  }
  return spell.get(t);
}

// A lower-case word read by text/romaji.py's four rules (nn, not before y; n before a consonant or at the end; a doubled
// letter or t before ch; the longest syllable), or null when it is not romaji.
export function readRomaji(word, t) {
  const found = syllables(t);
  let out = "", i = 0;
  if (word.length < 2) return null;
  while (i < word.length) {
    const c = word[i], next = word[i + 1];
    if (c === "n" && next === "n" && word[i + 2] !== "y") { out += t.n; i += 2; continue; }
    if (c === "n" && (next === undefined || !(t.vowels + "y").includes(next))) { out += t.n; i += 1; continue; }
    if (t.doubled.includes(c) && (next === c || (c === "t" && word.slice(i + 1, i + 3) === "ch"))) { out += t.sokuon; i += 1; continue; }
    const size = [3, 2, 1].find((n) => i + n <= word.length && found[word.slice(i, i + n)] !== undefined);
    if (!size) return null;
    out += found[word.slice(i, i + size)];
    i += size;
  }
  return out;
}

export function romajiKana(text, table) {
  return (fold(text).match(/[a-z]+/g) || []).map((w) => readRomaji(w, table)).filter((k) => k).join("");
}

const byCodePoint = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const isKana = (c) => (c >= "\u30a1" && c <= "\u30fa") || c === "\u30fc";

function thesaurusWordings(folded, thesaurus) {
  const spans = [];
  for (const wording of Object.keys(thesaurus).sort(byCodePoint)) {
    let start = wording ? folded.indexOf(wording) : -1;
    while (start >= 0) { spans.push([start, start + wording.length, wording]); start = folded.indexOf(wording, start + 1); }
  }
  const kept = spans.filter((s) => !spans.some((o) => o !== s && !(o[0] === s[0] && o[1] === s[1] && o[2] === s[2]) && o[0] <= s[0] && s[1] <= o[1]));
  kept.sort((a, b) => a[0] - b[0] || a[1] - b[1] || byCodePoint(a[2], b[2]));
  return [...new Set(kept.map((s) => s[2]))];
}

export function queryTexts(query, thesaurus, english, romaji) {
  const folded = fold(query);
  const texts = [folded, romajiKana(query, romaji)];
  const phrase = ` ${(folded.replaceAll("'", "").match(/[a-z]+/g) || []).join(" ")} `;
  for (const words of Object.keys(english).sort(byCodePoint)) if (phrase.includes(` ${words} `)) texts.push(fold(english[words]));
  for (const wording of thesaurusWordings(folded, thesaurus)) for (const term of thesaurus[wording]) texts.push(fold(term));
  return texts.filter((t) => t);
}

function cutsAscii(text, start, end) {
  const same = (a, b) => a !== undefined && b !== undefined && ((/^[a-z]$/i.test(a) && /^[a-z]$/i.test(b)) || (/^[0-9]$/.test(a) && /^[0-9]$/.test(b)));
  return (start > 0 && same(text[start - 1], text[start])) || (end < text.length && same(text[end - 1], text[end]));
}

export const termKey = (term) => [...term].slice(0, 2).join("");

// The keys whose terms a query's texts may hold: each character and each pair of adjacent ones.
export function queryKeys(texts) {
  const keys = [];
  for (const text of texts) {
    const chars = [...text];
    keys.push(...chars, ...chars.slice(1).map((c, i) => chars[i] + c));
  }
  return [...new Set(keys)];
}

// (body terms, reading terms) of a query; lookup(key): the vocabulary's terms filed under key.
export function queryTerms(query, thesaurus, english, romaji, lookup) {
  const body = [], reading = [];
  for (const text of queryTexts(query, thesaurus, english, romaji)) {
    const chars = [...text], spans = [];
    for (let i = 0; i < chars.length; i++) {
      for (const key of i + 1 < chars.length ? [chars[i], chars[i] + chars[i + 1]] : [chars[i]]) {
        for (const term of lookup(key)) {
          const size = [...term].length;
          if (chars.slice(i, i + size).join("") === term) spans.push([i, i + size, term]);
        }
      }
    }
    const kana = spans.filter((s) => s[1] - s[0] >= MIN_READING && [...s[2]].every(isKana));
    const read = kana.filter(([a, b]) => !kana.some((o) => o[0] <= a && b <= o[1] && o[1] - o[0] > b - a));
    reading.push(...read.map((s) => s[2]));
    for (const [start, end, term] of spans) {
      const inside = read.some(([a, b]) => a <= start && end <= b && !(a === start && b === end));
      if ((end - start > 1 || !isKana(term)) && !cutsAscii(chars, start, end) && !inside) body.push(term);
    }
  }
  return [[...new Set(body)], [...new Set(reading)]];
}

function fnv1a(text) {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h;
}

// Each file is checked against the digest the entry point lists (the first 8 bytes of its sha256), and each
// count against the bytes that hold it, before use: browser/verify.py's checks, rule for rule.
export const FORMAT = "knowledge-search/3";
const ENTRY = "knowledge-search.json", FIELDS = ["body", "reading", "title"], NAMES = { t: "bin", o: "bin", r: "json", p: "bin", v: "bin", c: "bin", k: "bin", g: "bin" };
const DENSE_KINDS = { v: "pieces", c: "codes", k: "offset" };  // the dense channel's files (browser/dense.py)
const MAX_ROWS = 2 ** 24, MAX_FILES = 1024, MAX_RECORD_FILES = 2048;  // browser/bundle.py's MAX_SHARDS, MAX_RECORD_FILES
export const MAX_QUERY = 2000;  // characters, as the CLI and MCP
const broken = (name, detail) => new Error(`knowledge-search: ${name} is broken (${detail}); the site's search `
  + "files were changed or partly copied: build the index again and deploy it");
const isCount = (v, limit) => Number.isInteger(v) && v >= 0 && v <= limit;
const isNumber = (v) => typeof v === "number" && Number.isFinite(v);
const isText = (v) => typeof v === "string";
const strings = (v) => Array.isArray(v) && v.every(isText);
const isTable = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

// The link when following it can only load a page: no scheme (site-relative) or http(s), the scheme read
// as the browser reads an href (" JavaScript:", "java\tscript:" are javascript:); else null (bundle.safe_link).
export function safeLink(url) {
  if (!isText(url)) return null;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url.replace(/^[\0- ]+|[\0- ]+$/g, "").replace(/[\t\n\r]/g, ""));
  return !scheme || /^https?$/i.test(scheme[1]) ? url : null;
}

function reader(data, name) {
  const read = {
    at: 0,
    left: () => data.length - read.at,
    varint() {
      let value = 0;
      for (let shift = 0; shift < 56; shift += 7) {  // 8 bytes at most: every count is below 2^53
        if (read.at >= data.length) throw broken(name, `it ends inside a number at byte ${read.at}`);
        const byte = data[read.at++];
        value += (byte & 0x7f) * 2 ** shift;
        if (byte < 0x80) return value;
      }
      throw broken(name, `a number at byte ${read.at - 8} is longer than 8 bytes`);
    },
    take(size) {
      if (size > read.left()) throw broken(name, `it declares ${size} bytes at byte ${read.at}, but only ${read.left()} follow`);
      return data.subarray(read.at, (read.at += size));
    },
  };
  return read;
}

const utf8 = (data, name, what) => {
  try { return new TextDecoder("utf-8", { fatal: true }).decode(data); } catch { throw broken(name, what); }
};

// `n` ascending rows stored as varint deltas (the first from row 0), each below `rows` (browser/verify.py _rows).
function readRows(read, n, rows, name, what) {
  const found = new Array(n);
  for (let i = 0, row = 0; i < n; i++) {
    row += read.varint();
    if (row >= rows) throw broken(name, `${what} names row ${row} of ${rows}`);
    found[i] = row;
  }
  return found;
}

function readShard(data, rows, name) {
  const out = new Map(), read = reader(data, name);
  while (read.left()) {
    const term = utf8(read.take(read.varint()), name, `a term before byte ${read.at} is not UTF-8`), perField = [];
    for (const _ of FIELDS) {
      const n = read.varint();
      // each posting takes a byte of row delta and a byte of q at least
      if (2 * n > read.left()) throw broken(name, `a term declares ${n} postings, more than the ${read.left()} bytes left hold`);
      perField.push([readRows(read, n, rows, name, "a posting"), read.take(n)]);
    }
    out.set(term, perField);
  }
  return out;
}

// The entry point's facet lists (a site with versions or languages), in the order their codes follow the
// level codes in the places file (browser/verify.py FACET_KEYS).
const FACET_KEYS = ["versions", "languages"];

function readPlaces(data, rows, name, facets = []) {
  if (2 * rows > data.length) throw broken(name, `rows ${rows} need at least ${2 * rows} bytes, the file has ${data.length}`);
  const read = reader(data, name);
  const places = () => Array.from({ length: rows }, (_, row) => {
    const delta = read.varint();
    if (delta > row) throw broken(name, `row ${row} names a place before row 0`);
    return row - delta;
  });
  const place = places(), across = facets.includes("versions") ? places() : null;  // across: the place in every version
  const columns = 1 + facets.length;
  if (read.left() !== columns * rows) throw broken(name, `${read.left()} bytes follow the places, not the ${columns * rows} of ${rows} rows' codes`);
  const codes = (i) => data.subarray(read.at + i * rows, read.at + (i + 1) * rows);
  const both = codes(0);  // type and level share a byte (4 bits each, 15 for none): as codes, 255 for none
  const types = both.map((b) => ((b & 15) === 15 ? 255 : b & 15)), levels = both.map((b) => (b >> 4 === 15 ? 255 : b >> 4));
  return { place, across, types, levels, facets: Object.fromEntries(facets.map((key, i) => [key, codes(1 + i)])) };
}

// Which version and language a query is answered from when it names none (ranking/facets.py, stated there):
// the newest version; Japanese pages for a question in Japanese script, when the site has some; "all": every one.
const JAPANESE_SCRIPT = /[\u3041-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]/;
export function facetDefaults(query, versions, languages, { version = null, language = null } = {}) {
  const wanted = JAPANESE_SCRIPT.test(query || "") && languages.includes("ja") ? "ja" : null;
  return {
    version: version === "all" ? null : version !== null ? version : versions.length ? versions[0] : null,
    language: language === "all" ? null : language !== null ? language : wanted,
  };
}

function parseJson(data, name) {
  try { return JSON.parse(utf8(data, name)); } catch { throw broken(name, "it is not JSON"); }
}

// [id, url, title, type, level, learns, excerpt] × count
function readRecords(data, count, name) {
  const records = parseJson(data, name), optional = (v) => v === null || isText(v);
  if (!Array.isArray(records) || records.length !== count || !records.every((r) => Array.isArray(r) && r.length === 7
      && [0, 2, 3, 6].every((i) => isText(r[i])) && optional(r[1]) && optional(r[4]) && strings(r[5]))) {
    throw broken(name, `it does not hold ${count} records of 7 fields`);
  }
  return records;
}

function unpack(text) {
  let raw;
  try { raw = atob(text); } catch { throw new Error("not base64"); }
  if (!isText(text) || raw.length % 8) throw new Error("not a whole number of 8-byte digests");
  return Array.from({ length: raw.length / 8 }, (_, i) => Uint8Array.from(raw.slice(8 * i, 8 * i + 8), (c) => c.charCodeAt(0)));
}

// The digests of the entry point's files by kind (t, r, p), once its shape and counts are sound.
function checkEntry(entry) {
  const fail = (detail) => { throw broken(ENTRY, detail); };
  if (!isTable(entry) || entry.format !== FORMAT) fail(`it is not a ${FORMAT} entry point`);
  const { rows, records, types, levels, thesaurus, english } = entry;
  if (!isCount(rows, MAX_ROWS)) fail(`rows ${JSON.stringify(rows)} is not a count from 0 to ${MAX_ROWS}`);
  if (JSON.stringify(entry.fields) !== JSON.stringify(FIELDS) || ![entry.weights, entry.scales]
      .every((v) => Array.isArray(v) && v.length === FIELDS.length && v.every(isNumber))) {
    fail("fields, weights or scales are not what this reader ranks with");
  }
  if (!isTable(records) || !isCount(records.rows, MAX_ROWS) || records.rows < 1) fail("records.rows is not a count from 1");
  const labelled = (v) => isTable(v) && isText(v.value) && isText(v.label);
  if (!Array.isArray(types) || types.length > 15 || !types.every((t) => labelled(t) && isNumber(t.weight) && isNumber(t.named) && strings(t.words))
      || !Array.isArray(levels) || levels.length > 15 || !levels.every(labelled)) {  // 15: browser/bundle.py MAX_LEVELS
    fail("types or levels are not lists of values and labels");
  }
  if (!FACET_KEYS.every((key) => entry[key] === undefined || (Array.isArray(entry[key]) && entry[key].length < 255 && entry[key].every(labelled)))) {
    fail("versions or languages are not lists of values and labels");
  }
  if (!isTable(thesaurus) || !Object.values(thesaurus).every(strings) || !isTable(english) || !Object.values(english).every(isText)) {
    fail("thesaurus or english is not a table of terms");
  }
  const r = entry.romaji, texts = (v) => isTable(v) && Object.values(v).every(isText);
  if (!isTable(r) || !["vowels", "n", "sokuon", "doubled", "small"].every((k) => isText(r[k])) || r.vowels.length !== 5
      || [...r.small].length !== 5 || !texts(r.rows) || !texts(r.contracted)) fail("romaji is not a syllable table");
  let d;
  try {
    d = { t: unpack(entry.shards), r: rows ? unpack(records.files) : [], p: unpack(entry.places),
          o: entry.postings === undefined ? [] : unpack(entry.postings) };
  } catch (error) { fail(`its digests are unreadable: ${error.message}`); }
  if (d.o.length > MAX_FILES) fail(`it lists ${d.o.length} posting shards, more than ${MAX_FILES}`);
  if (d.t.length < 1 || d.t.length > MAX_FILES || d.p.length !== 1 || d.r.length !== Math.ceil(rows / records.rows) || d.r.length > MAX_RECORD_FILES) {
    fail(`it lists ${d.t.length} term shards, ${d.r.length} record files and ${d.p.length} places files for ${rows} rows`);
  }
  if (entry.dense !== undefined) {  // the dense channel: on unless the site's owner turned it off
    const x = entry.dense;
    if (!isTable(x) || !isCount(x.dims, 1024) || x.dims < 4 || x.dims % 4 || !Array.isArray(x.levels) || x.levels.length !== 4
        || !x.levels.every(isNumber) || !isCount(x.rows, MAX_ROWS) || x.rows < 1 || !isCount(x.candidates, MAX_ROWS) || x.candidates < 1
        || !["dbsf", "rrf"].includes(x.fusion) || !isCount(x.rrf_k, MAX_ROWS) || !isTable(x.weights) || JSON.stringify(Object.keys(x.weights).sort()) !== '["dense","lexical"]' || !Object.values(x.weights).every(isNumber)) {
      fail("dense is not a table of dims, levels, rows, fusion, candidates and weights");
    }
    const clustered = x.probe !== undefined;  // the codes in clusters (browser/dense.py)
    try {
      for (const [kind, key] of Object.entries(DENSE_KINDS)) d[kind] = unpack(x[key]);
      if (clustered) d.g = unpack(x.centres);
    } catch (error) { fail(`its dense digests are unreadable: ${error.message}`); }
    if (clustered && !(isCount(x.probe, MAX_FILES) && x.probe >= 1 && x.probe <= d.c.length && d.c.length <= MAX_FILES && d.g.length === 1)) {
      fail(`it lists ${d.c.length} clusters, ${d.g.length} centres' files and probes ${x.probe} of them`);
    }
    if (d.v.length < 1 || d.v.length > MAX_FILES || (!clustered && d.c.length !== Math.ceil(rows / x.rows)) || d.k.length !== 1) {
      fail(`it lists ${d.v.length} piece shards, ${d.c.length} code files and ${d.k.length} offset files for ${rows} rows`);
    }
  }
  return d;
}

const hex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");

async function verified(data, expected, name) {
  const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  if (!expected.every((b, i) => sum[i] === b)) throw broken(name, `its sha256 does not begin with the digest ${ENTRY} lists for it`);
  return data;
}

// Per type code, a row's multiplier for this query from the bundle's type-prior table (ranking.type_priors):
// the type's weight, or its weight when named for the one type the query names; 1 for no known type.
export function typeWeights(types, query) {
  const folded = fold(query);
  const named = types.map((t, i) => (t.words.some((w) => folded.includes(w)) ? i : -1)).filter((i) => i >= 0);
  const weights = types.map((t, i) => (named.length === 1 && named[0] === i ? t.named : t.weight));
  return (code) => (code < weights.length ? weights[code] : 1);
}

// The first k places of `ranked` ([row, score], best first), each led by its best row (ranking/places.py).
export function leadsByPlace(ranked, placeOf, k) {
  const seen = new Set(), leads = [];
  for (const item of ranked) {
    if (leads.length === k) break;
    if (seen.has(placeOf(item))) continue;
    seen.add(placeOf(item));
    leads.push(item);
  }
  return leads;
}

// Distribution-based score fusion (ranking/fusion.py's dbsf): each channel's scores (a Map of row -> score)
// mapped through mean ± 3 sd, weighted, summed; channels in the order given.
export function dbsf(channels, weights) {
  const fused = new Map();
  for (const [channel, scores] of Object.entries(channels)) {
    if (!scores.size) continue;
    const values = [...scores.values()];
    let sum = 0;
    for (const v of values) sum += v;
    const mean = sum / values.length;
    let squares = 0;
    for (const v of values) squares += (v - mean) ** 2;
    const spread = 6 * (squares / values.length) ** 0.5, low = mean - spread / 2, weight = weights[channel] ?? 1;
    for (const [row, value] of scores) fused.set(row, (fused.get(row) || 0) + weight * (spread ? (value - low) / spread : 1));
  }
  return fused;
}

// Weighted reciprocal rank fusion (ranking/fusion.py's rrf): per channel, weight / (k + rank), ranks by score, ties by row.
export function rrf(channels, weights, k) {
  const fused = new Map();
  for (const [channel, scores] of Object.entries(channels)) {
    const weight = weights[channel] ?? 1;
    [...scores].sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .forEach(([row], i) => fused.set(row, (fused.get(row) || 0) + weight / (k + i + 1)));
  }
  return fused;
}

// The fusion the bundle names (ranking/settings.py SearchSettings.fusion, as the CLI's).
export const fuse = (method, channels, weights, k) => (method === "rrf" ? rrf(channels, weights, k) : dbsf(channels, weights));

// The n best of a channel's scores (a Map), best first, ties by row.
const topOf = (scores, n) => new Map([...scores].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, n));

// The dense channel's files (knowledge_build/browser/dense.py), checked as browser/verify.py checks them.
function readPieces(data, dims, name) {
  const out = new Map(), read = reader(data, name), view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  while (read.left()) {
    const term = utf8(read.take(read.varint()), name, `a piece before byte ${read.at} is not UTF-8`);
    const at = read.at, packed = read.take(8 + dims / 2).subarray(8);
    const weight = view.getFloat32(at, true), scale = view.getFloat32(at + 4, true);
    if (!Number.isFinite(weight) || !Number.isFinite(scale)) throw broken(name, "a piece's weight or scale holds a number that is not finite");
    const row = [];
    for (const byte of packed) for (const n of [byte & 15, byte >> 4]) row.push(scale * (n >= 8 ? n - 16 : n));  // signed 4 bits, low first
    out.set(term, [weight, row]);
  }
  return out;
}

function readOffset(data, dims, name) {
  if (data.length !== 8 * dims) throw broken(name, `it has ${data.length} bytes, not the ${8 * dims} of an offset and spreads of ${dims} axes`);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const floats = Array.from({ length: 2 * dims }, (_, i) => view.getFloat32(4 * i, true));
  if (!floats.every(Number.isFinite)) throw broken(name, "the offset or a spread holds a number that is not finite");
  return [floats.slice(0, dims), floats.slice(dims)];
}

// (its rows, their codes) of one cluster's file (browser/verify.py read_cluster).
function readCluster(data, rows, dims, name) {
  const read = reader(data, name), n = read.varint();
  if (n > read.left()) throw broken(name, `it declares ${n} rows, more than the ${read.left()} bytes left hold`);
  const found = readRows(read, n, rows, name, "a cluster");
  if (read.left() !== n * dims / 4) throw broken(name, `${read.left()} bytes follow its rows, not the ${n * dims / 4} of ${n} codes`);
  return [found, read.take(read.left())];
}

function readCodes(data, count, dims, name) {
  if (data.length !== count * dims / 4) throw broken(name, `it has ${data.length} bytes, not the ${count * dims / 4} of ${count} codes`);
  return data;
}

export async function open(base) {
  // SubtleCrypto exists only in a secure context: rather than search files it cannot check, the box says so.
  if (!globalThis.crypto?.subtle) {
    throw new Error("knowledge-search: this page is not served over https (nor from localhost), where the browser "
      + "can check the search files; serve the site over https");
  }
  const fetched = new Map();
  // The bytes of `name`, made into a value by `use` once (a failure is not kept: the next query fetches again).
  const get = (name, use) => {
    if (!fetched.has(name)) {
      const url = new URL(name, base);
      fetched.set(name, fetch(url).then(async (response) => {
        if (!response.ok) throw Object.assign(new Error(`knowledge-search: could not fetch ${url} (HTTP ${response.status})`), { missing: true });
        return use(new Uint8Array(await response.arrayBuffer()));
      }).catch((error) => { fetched.delete(name); throw error; }));
    }
    return fetched.get(name);
  };
  const entry = await get(ENTRY, (data) => parseJson(data, ENTRY));
  const digests = checkEntry(entry);
  const load = (kind, number, read) => {
    const name = `knowledge-search-${kind}${hex(digests[kind][number].subarray(0, 4))}.${NAMES[kind]}`;
    return get(name, async (data) => read(await verified(data, digests[kind][number], name), name));
  };
  const shard = (number) => load("t", number, (data, name) => readShard(data, entry.rows, name));
  const shardOf = (key) => fnv1a(key) % digests.t.length;
  const rowInfo = () => load("p", 0, (data, name) => readPlaces(data, entry.rows, name, FACET_KEYS.filter((key) => entry[key])));
  const size = entry.records.rows;
  const records = (number) => load("r", number, (data, name) => readRecords(data, Math.min(size, entry.rows - number * size), name));

  async function scores(query) {
    const keys = queryKeys(queryTexts(query, entry.thesaurus, entry.english, entry.romaji));
    const loaded = new Map();
    await Promise.all([...new Set(keys.map(shardOf))].map(async (n) => loaded.set(n, await shard(n))));
    const lookup = (key) => [...loaded.get(shardOf(key)).keys()].filter((t) => termKey(t) === key);
    const [body, reading] = queryTerms(query, entry.thesaurus, entry.english, entry.romaji, lookup);
    // A term in its key's shard with no postings in any field has them in a posting shard (browser/bundle.py).
    const postings = new Map(await Promise.all([...new Set(body.concat(reading))].map(async (term) => {
      const here = loaded.get(shardOf(termKey(term))).get(term);
      if (here.some(([rows]) => rows.length)) return [term, here];
      if (!digests.o.length) throw broken(ENTRY, `the term ${term} has its postings in a posting shard, but it lists none`);
      const shard = await load("o", fnv1a(term) % digests.o.length, (data, name) => Object.assign(readShard(data, entry.rows, name), { name }));
      if (!shard.has(term)) throw broken(shard.name, `the term ${term} is not in it`);
      return [term, shard.get(term)];
    })));
    const found = new Map();
    entry.fields.forEach((field, slot) => {
      const unit = entry.weights[slot] * entry.scales[slot];
      const terms = field === "reading" ? reading : field === "title" ? body.concat(reading) : body;
      for (const term of terms) {
        const [rows, q] = postings.get(term)[slot];
        for (let i = 0; i < rows.length; i++) found.set(rows[i], (found.get(rows[i]) || 0) + unit * q[i]);
      }
    });
    return { found, body, reading };
  }

  // {row: dense score} of every row (browser/search.py's dense_scores, step for step); an empty Map without the
  // dense channel, for a query none of whose pieces it has, or when its files are missing (with a warning).
  let warned = false;
  async function denseScores(body) {
    const x = entry.dense;
    if (!x) return new Map();
    const dims = x.dims, width = dims / 4;
    try {
      const terms = body;  // its body terms: the pieces are the body's words (dense.py)
      const shards = await Promise.all(terms.map((t) => load("v", fnv1a(t) % digests.v.length, (data, name) => readPieces(data, dims, name))));
      let total = 0, vector = new Array(dims).fill(0);
      terms.forEach((term, i) => {
        const found = shards[i].get(term);
        if (found) { total += found[0]; vector = vector.map((v, a) => v + found[0] * found[1][a]); }
      });
      if (!total) return new Map();
      const clustered = x.probe !== undefined;  // the codes in clusters: the rows of the query's probe best clusters
      const [[offset, spread], codes] = await Promise.all([load("k", 0, (data, name) => readOffset(data, dims, name)),
        clustered ? load("g", 0, (data, name) => readCodes(data, digests.c.length, dims, name))
          : Promise.all(digests.c.map((_, n) => load("c", n, (data, name) => readCodes(data, Math.min(x.rows, entry.rows - n * x.rows), dims, name))))]);
      const query = vector.map((v, a) => (v / total - offset[a]) * spread[a]);
      const tables = Array.from({ length: width }, (_, j) => Float64Array.from({ length: 256 }, (_, byte) => {
        let value = 0;
        for (let i = 0; i < 4; i++) value += x.levels[(byte >> (2 * i)) & 3] * query[4 * j + i];
        return value;
      }));
      const score = (data, r) => {
        let value = 0;
        for (let j = 0; j < width; j++) value += tables[j][data[r * width + j]];
        return value;
      };
      const out = new Map();
      if (clustered) {
        const best = digests.c.map((_, c) => [c, score(codes, c)]).sort((a, b) => b[1] - a[1] || a[0] - b[0])
          .slice(0, x.probe).map(([c]) => c).sort((a, b) => a - b);
        const held = await Promise.all(best.map((n) => load("c", n, (data, name) => readCluster(data, entry.rows, dims, name))));
        for (const [rows, data] of held) rows.forEach((row, r) => out.set(row, score(data, r)));
        return out;
      }
      codes.forEach((data, n) => {
        for (let r = 0; r * width < data.length; r++) out.set(n * x.rows + r, score(data, r));
      });
      return out;
    } catch (error) {
      if (!error.missing) throw error;
      if (!warned) console.warn(`${error.message}: the search box answers without its dense channel`);
      warned = true;
      return new Map();
    }
  }

  async function search(query, { k = 8, type = null, level = null, version = null, language = null } = {}) {
    if (!query || !query.trim()) return [];
    const n = [...query].length;
    if (n > MAX_QUERY) throw new Error(`knowledge-search: a query is at most ${MAX_QUERY} characters; this one has ${n}`);
    const [{ found, body, reading }, info] = await Promise.all([scores(query), rowInfo()]);
    const typeCode = type === null ? null : entry.types.findIndex((t) => t.value === type);
    const levelCode = level === null ? null : entry.levels.findIndex((v) => v.value === level);
    const values = (key) => (entry[key] || []).map((v) => v.value);
    const wanted = facetDefaults(query, values("versions"), values("languages"), { version, language });
    const facetCodes = [["versions", wanted.version], ["languages", wanted.language]]
      .filter(([key, value]) => value !== null && info.facets[key])
      .map(([key, value]) => [info.facets[key], values(key).indexOf(value)]);
    const weight = typeWeights(entry.types, query);
    const passing = (scores) => new Map([...scores].filter(([row]) => (typeCode === null || info.types[row] === typeCode)
      && (levelCode === null || info.levels[row] === levelCode)
      && !facetCodes.some(([codes, code]) => codes[row] !== code && codes[row] !== 255)));  // 255: no version
    let fused = passing(found);
    const near = passing(await denseScores(body));
    if (near.size) {  // the same fusion as the CLI's, over each channel's top candidates (ranking/fusion.py)
      const x = entry.dense;
      fused = fuse(x.fusion, { lexical: topOf(fused, x.candidates), dense: topOf(near, x.candidates) }, x.weights, x.rrf_k);
    }
    const ranked = [...fused].map(([row, score]) => [row, type === null ? score * weight(info.types[row]) : score]);
    ranked.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    const every = info.across && wanted.version === null;  // every version: each place once, its newest version first
    const place = every ? info.across : info.place;
    let leads = leadsByPlace(ranked, ([row]) => place[row], k);
    if (every) {
      const codes = info.facets.versions, newest = new Map();  // code 0: the newest version
      for (const item of ranked) {
        const have = newest.get(place[item[0]]);
        if (!have || codes[item[0]] < codes[have[0]]) newest.set(place[item[0]], item);
      }
      leads = leads.map(([row]) => newest.get(place[row]));
    }
    const held = await Promise.all(leads.map(([row]) => records(Math.floor(row / size))));
    return leads.map(([row, score], i) => {
      const [id, link, title, typeValue, levelValue, learns, excerpt] = held[i][row % size];
      const url = safeLink(link);
      const kind = entry.types.find((t) => t.value === typeValue);
      return { id, url, title, type: typeValue, typeLabel: kind ? kind.label : typeValue, level: levelValue, learns,
               excerpt, marks: marks(excerpt, body, reading), score, terms: body, readings: reading };
    });
  }

  return { filters: { types: entry.types.map(({ value, label }) => ({ value, label })), levels: entry.levels,
                      versions: entry.versions || [], languages: entry.languages || [] }, search, entry };
}

// Ranges [start, end) of `text` (string offsets) whose folded characters spell one of the body `terms`,
// or at least MIN_READING kana of a reading (タスキガケ marks the たすき of たすき掛け). A term of one
// character is marked only beside a longer match (式 of 判別式, not every 式), unless no term is longer.
export function marks(text, terms, readings = []) {
  const chars = [...text], folded = [], origin = [];
  chars.forEach((c, i) => { for (const f of fold(c)) { folded.push(f); origin.push(i); } });
  const hit = new Array(chars.length).fill(false);
  const mark = (term, beside) => {
    const t = [...term];
    for (let j = 0; j + t.length <= folded.length; j++) {
      if (!t.every((c, x) => folded[j + x] === c)) continue;
      const a = origin[j], b = origin[j + t.length - 1];
      if (beside && !hit[a - 1] && !hit[b + 1]) continue;
      for (let x = 0; x < t.length; x++) hit[origin[j + x]] = true;
    }
  };
  const longer = terms.filter((t) => [...t].length > 1);
  for (const term of longer.length ? longer : terms) mark(term, false);
  for (const reading of readings) {
    const r = [...reading];
    for (let size = r.length; size >= MIN_READING; size--) {
      for (let i = 0; i + size <= r.length; i++) mark(r.slice(i, i + size).join(""), false);
    }
  }
  if (longer.length) for (const term of terms.filter((t) => [...t].length === 1)) mark(term, true);
  const ranges = [];
  let offset = 0;
  chars.forEach((c, i) => {
    if (hit[i]) {
      const last = ranges[ranges.length - 1];
      if (last && last[1] === offset) last[1] += c.length; else ranges.push([offset, offset + c.length]);
    }
    offset += c.length;
  });
  return ranges;
}
