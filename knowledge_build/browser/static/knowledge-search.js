// knowledge-search.js: the site's own search in the browser, from the bundle knowledge-build writes
// (knowledge-search.json and the files it names). No dependencies, no requests but to the bundle.
// The analysis is knowledge_build/browser/analysis.py rule for rule; the ranking is browser/search.py's.

const SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ";
const SCRIPTS = /[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ]+|[₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₙ]+/g;
const DIGITS = "〇一二三四五六七八九";
const UNITS = { "十": 10n, "百": 100n, "千": 1000n };
const ROMAJI = /^(?:(?:ky|gy|sh|ch|ts|ny|hy|by|py|my|ry|j|[kgsztdnhbpmyrwf])?[aiueo]|n(?![aiueoy])|([kgstdhbpmrfjcz])(?=\1)|t(?=ch))+$/;
const MIN_READING = 3;

const ONSETS = {
  "": "アイウエオ", k: "カキクケコ", g: "ガギグゲゴ", s: "サシスセソ", z: "ザジズゼゾ", t: "タチツテト",
  d: "ダヂヅデド", n: "ナニヌネノ", h: "ハヒフヘホ", b: "バビブベボ", p: "パピプペポ", m: "マミムメモ",
  y: ["ヤ", "イ", "ユ", "イェ", "ヨ"], r: "ラリルレロ", w: ["ワ", "ウィ", "ウ", "ウェ", "ヲ"],
  f: ["ファ", "フィ", "フ", "フェ", "フォ"], j: ["ジャ", "ジ", "ジュ", "ジェ", "ジョ"],
  sh: ["シャ", "シ", "シュ", "シェ", "ショ"], ch: ["チャ", "チ", "チュ", "チェ", "チョ"],
  ts: ["ツァ", "ツィ", "ツ", "ツェ", "ツォ"],
};
for (const [onset, row] of [["ky", "キ"], ["gy", "ギ"], ["ny", "ニ"], ["hy", "ヒ"], ["by", "ビ"], ["py", "ピ"], ["my", "ミ"], ["ry", "リ"]]) {
  ONSETS[onset] = ["ャ", "ィ", "ュ", "ェ", "ョ"].map((small) => row + small);
}
const SYLLABLES = {};
for (const [onset, kana] of Object.entries(ONSETS)) {
  [..."aiueo"].forEach((vowel, i) => { SYLLABLES[onset + vowel] = typeof kana === "string" ? [...kana][i] : kana[i]; });
}

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

function toKana(word) {
  let out = "", i = 0;
  while (i < word.length) {
    const size = [3, 2, 1].find((n) => i + n <= word.length && SYLLABLES[word.slice(i, i + n)] !== undefined);
    if (size) { out += SYLLABLES[word.slice(i, i + size)]; i += size; continue; }
    const c = word[i], next = word[i + 1];
    out += c === "n" ? "ン" : (next === c || (c === "t" && next === "c")) ? "ッ" : c;
    i += 1;
  }
  return out;
}

export function romajiKana(text) {
  return (fold(text).match(/[a-z]+/g) || []).filter((w) => w.length > 1 && ROMAJI.test(w)).map(toKana).join("");
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

export function queryTexts(query, thesaurus, english) {
  const folded = fold(query);
  const texts = [folded, romajiKana(query)];
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
export function queryTerms(query, thesaurus, english, lookup) {
  const body = [], reading = [];
  for (const text of queryTexts(query, thesaurus, english)) {
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

function varint(data, at) {
  let value = 0, shift = 0, byte;
  do { byte = data[at++]; value += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte >= 0x80);
  return [value, at];
}

function readShard(data, fields) {
  const out = new Map(), decoder = new TextDecoder();
  let at = 0, size, n, delta;
  while (at < data.length) {
    [size, at] = varint(data, at);
    const term = decoder.decode(data.subarray(at, at + size));
    at += size;
    const perField = [];
    for (let f = 0; f < fields; f++) {
      [n, at] = varint(data, at);
      const rows = new Array(n);
      let row = 0;
      for (let i = 0; i < n; i++) { [delta, at] = varint(data, at); row += delta; rows[i] = row; }
      perField.push([rows, data.subarray(at, at + n)]);
      at += n;
    }
    out.set(term, perField);
  }
  return out;
}

const NAMES = { t: "bin", r: "json", p: "bin" };

export async function open(base) {
  const fetched = new Map();
  const get = (name, kind) => {
    if (!fetched.has(name)) {
      const url = new URL(name, base);
      fetched.set(name, fetch(url).then((response) => {
        if (!response.ok) throw new Error(`knowledge-search: could not fetch ${url} (HTTP ${response.status})`);
        return kind === "json" ? response.json() : response.arrayBuffer().then((b) => new Uint8Array(b));
      }).catch((error) => { fetched.delete(name); throw error; }));
    }
    return fetched.get(name);
  };
  const file = (kind, digest) => `knowledge-search-${kind}${digest}.${NAMES[kind]}`;
  const entry = await get("knowledge-search.json", "json");
  const shards = new Map();
  const shard = async (number) => {
    if (!shards.has(number)) shards.set(number, readShard(await get(file("t", entry.shards[number]), "bin"), entry.fields.length));
    return shards.get(number);
  };
  const shardOf = (key) => fnv1a(key) % entry.shards.length;
  let places = null;
  const rowInfo = async () => {
    if (!places) {
      const data = await get(file("p", entry.places), "bin");
      const place = new Array(entry.rows);
      let at = 0, delta;
      for (let row = 0; row < entry.rows; row++) { [delta, at] = varint(data, at); place[row] = row - delta; }
      places = { place, types: data.subarray(at, at + entry.rows), levels: data.subarray(at + entry.rows, at + 2 * entry.rows) };
    }
    return places;
  };

  async function scores(query) {
    const keys = queryKeys(queryTexts(query, entry.thesaurus, entry.english));
    const loaded = new Map();
    await Promise.all([...new Set(keys.map(shardOf))].map(async (n) => loaded.set(n, await shard(n))));
    const lookup = (key) => [...loaded.get(shardOf(key)).keys()].filter((t) => termKey(t) === key);
    const [body, reading] = queryTerms(query, entry.thesaurus, entry.english, lookup);
    const found = new Map();
    entry.fields.forEach((field, slot) => {
      const unit = entry.weights[slot] * entry.scales[slot];
      const terms = field === "reading" ? reading : field === "title" ? body.concat(reading) : body;
      for (const term of terms) {
        const [rows, q] = loaded.get(shardOf(termKey(term))).get(term)[slot];
        for (let i = 0; i < rows.length; i++) found.set(rows[i], (found.get(rows[i]) || 0) + unit * q[i]);
      }
    });
    return { found, body, reading };
  }

  function typeWeights(query) {
    const folded = fold(query);
    const named = entry.types.map((t, i) => (t.words.some((w) => folded.includes(w)) ? i : -1)).filter((i) => i >= 0);
    const weights = entry.types.map((t) => t.weight);
    if (named.length === 1) weights[named[0]] = entry.types[named[0]].value === "example" ? 1 : entry.intent_boost;
    return (code) => (code < weights.length ? weights[code] : 1);
  }

  async function search(query, { k = 8, type = null, level = null } = {}) {
    if (!query || !query.trim()) return [];
    const [{ found, body, reading }, info] = await Promise.all([scores(query), rowInfo()]);
    const typeCode = type === null ? null : entry.types.findIndex((t) => t.value === type);
    const levelCode = level === null ? null : entry.levels.findIndex((v) => v.value === level);
    const weight = typeWeights(query);
    const ranked = [];
    for (const [row, score] of found) {
      if (typeCode !== null && info.types[row] !== typeCode) continue;
      if (levelCode !== null && info.levels[row] !== levelCode) continue;
      ranked.push([row, type === null ? score * weight(info.types[row]) : score]);
    }
    ranked.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    const seen = new Set(), leads = [];
    for (const [row, score] of ranked) {
      if (seen.has(info.place[row])) continue;
      seen.add(info.place[row]);
      leads.push([row, score]);
      if (leads.length === k) break;
    }
    const size = entry.records.rows;
    const records = await Promise.all(leads.map(([row]) => get(file("r", entry.records.files[Math.floor(row / size)]), "json")));
    return leads.map(([row, score], i) => {
      const [id, url, title, typeValue, levelValue, learns, excerpt] = records[i][row % size];
      const kind = entry.types.find((t) => t.value === typeValue);
      return { id, url, title, type: typeValue, typeLabel: kind ? kind.label : typeValue, level: levelValue, learns,
               excerpt, marks: marks(excerpt, body, reading), score };
    });
  }

  return { filters: { types: entry.types.map(({ value, label }) => ({ value, label })), levels: entry.levels }, search, entry };
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
