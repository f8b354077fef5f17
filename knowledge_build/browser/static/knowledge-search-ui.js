// The drop-in search box. Renders into every <div class="knowledge-search"> of the page and asks the
// core module for results; without JavaScript the container simply stays empty. Result text is the
// site's content: it is set as text, never parsed as HTML. No request leaves the site (the index: data-bundle,
// else this module's folder; this folder's stylesheet) unless the site's owner sets data-gap-report: then a query
// the student settled on (the list closed on it), and whether they opened one of its results, is posted once per
// page to that database's function knowledge_report_gap and nowhere else; the database keeps it only when its
// answer was weak (store/functions/gaps.sql).
import { MAX_QUERY, marks, open } from "./knowledge-search.js";

const DEBOUNCE_MS = 150;
const SHOWN = 8;
// Recent searches: kept in this browser's localStorage only (never sent anywhere), the last RECENT of them.
const RECENT = 5;
// The words of the query a result was chosen for, handed to the page it opens (sessionStorage: this tab only).
const LANDING = "knowledge-search:landing";
const MAX_LANDING_MARKS = 50;
let boxes = 0;
// What the box says, in the page's language: Japanese on a page whose <html lang> is ja or not given, or whose text
// is Japanese by its kana whatever its theme declares (html/main_content.py's written_in_japanese, on the page's main
// area or body), English on any other; the kinds' names too, for the badges and the filter.
const TEXT = {
  ja: { recent: "最近の検索", learns: "このリンクで学べること", box: "サイト内検索", placeholder: "サイト内を検索（例：たすきがけ）",
        type: "種類", allTypes: "すべての種類", level: "レベル", allLevels: "すべてのレベル", version: "版", newest: "最新の版",
        language: "言語", auto: "自動", results: "検索結果", allVersions: "すべての版", allLanguages: "すべての言語",
        count: (n) => `${n} 件`, none: (q) => `「${q}」は見つかりませんでした`, failed: (m) => `検索できませんでした（${m}）`,
        kinds: {} },
  en: { recent: "Recent search", learns: "What this link teaches", box: "Search this site", placeholder: "Search this site",
        type: "Kind", allTypes: "All kinds", level: "Level", allLevels: "All levels", version: "Version",
        newest: "Newest version", language: "Language", auto: "Automatic", results: "Results", allVersions: "All versions",
        allLanguages: "All languages", count: (n) => (n === 1 ? "1 result" : `${n} results`),
        none: (q) => `Nothing found for “${q}”`, failed: (m) => `Search failed (${m})`,
        kinds: { rule: "Rule", method: "Method", definition: "Definition", tip: "Tip", example: "Example",
                 section: "Section", table: "Table" } },
};
const KANA_SHARE = 0.05;  // html/main_content.py JAPANESE_KANA_SHARE (tests/test_install_search.py holds them equal)
function pageInJapanese() {
  const lang = (document.documentElement.lang || "ja").toLowerCase();
  if (lang === "ja" || lang.startsWith("ja-")) return true;
  const main = document.querySelector("[role=main], main, article") || document.body;
  const text = main ? main.textContent : "";
  const letters = (text.match(/\p{L}/gu) || []).length;
  return letters > 0 && (text.match(/[\u3041-\u3096\u30a1-\u30fa]/g) || []).length >= KANA_SHARE * letters;
}
const SAY = pageInJapanese() ? TEXT.ja : TEXT.en;
// A kind's name as the box says it: the bundle's (Japanese) label, or the page language's own.
const kindLabel = (value, label) => SAY.kinds[value] || label || value;

function stored(storage, key, fallback) {
  try { return JSON.parse(storage.getItem(key)) ?? fallback; } catch { return fallback; }
}

function store(storage, key, value) {
  try { storage.setItem(key, JSON.stringify(value)); } catch { /* storage off or full: nothing is kept */ }
}

// On the page a result opened: the query's words marked in the element its link points at (the box's own
// folding and readings: the marks of the excerpts). Once: the hand-over is removed when read.
function markLanding() {
  const landing = stored(sessionStorage, LANDING, null);
  if (!landing) return;
  sessionStorage.removeItem(LANDING);
  if (landing.path !== location.pathname || !Array.isArray(landing.terms)) return;
  let id = "";
  try { id = decodeURIComponent(location.hash.slice(1)); } catch { return; }
  const target = id && !id.startsWith(":~:") ? document.getElementById(id) : null;
  if (!target) return;
  const nodes = [];
  for (const part of region(target)) {
    const walker = document.createTreeWalker(part, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) nodes.push(walker.currentNode);
  }
  let count = 0;
  for (const node of nodes) {
    if (node.parentElement.closest("script, style, .ks")) continue;
    const ranges = marks(node.data, landing.terms, landing.readings || []);
    for (const [start, end] of ranges.reverse()) {  // from the end: earlier offsets stay valid
      if (count++ >= MAX_LANDING_MARKS) return;
      const word = node.splitText(start);
      word.splitText(end - start);
      word.replaceWith(el("mark", { class: "ks-landed", text: word.data }));
    }
  }
}

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

// Once per page; the box stays hidden until the sheet has loaded (or failed), so it never flashes unstyled.
function stylesheet() {
  let link = document.querySelector("link[data-knowledge-search]");
  if (!link) {
    link = el("link", { rel: "stylesheet", href: new URL("knowledge-search.css", import.meta.url).href,
                        "data-knowledge-search": "" });
    document.head.append(link);
  }
  return new Promise((resolve) => {
    if (link.sheet) return resolve();
    link.addEventListener("load", resolve);
    link.addEventListener("error", resolve);
  });
}

// The excerpt with the matched ranges in <mark>; ranges that overlap or leave the text are skipped.
function marked(text, marks) {
  const node = el("span", { class: "ks-excerpt" });
  let at = 0;
  for (const [start, end] of marks || []) {
    if (start < at || end <= start || end > text.length) continue;
    node.append(text.slice(at, start), el("mark", { text: text.slice(start, end) }));
    at = end;
  }
  node.append(text.slice(at));
  return node;
}

// What a link to `target` points at: a box is its element; a heading is itself and what follows it up to the
// next heading of its level or higher (its section).
function region(target) {
  const level = /^H([1-6])$/.exec(target.tagName);
  if (!level) return [target];
  const parts = [target];
  for (let next = target.nextElementSibling; next; next = next.nextElementSibling) {
    const other = /^H([1-6])$/.exec(next.tagName);
    if (other && Number(other[1]) <= Number(level[1])) break;
    parts.push(next);
  }
  return parts;
}

function recentOption(query, id) {
  return el("li", { id, class: "ks-result ks-recent", role: "option", "aria-selected": "false" },
    el("button", { type: "button", class: "ks-link", tabindex: "-1", "data-query": query },
      el("span", { class: "ks-recent-head", text: SAY.recent }), el("span", { class: "ks-title", text: query })));
}

function option(result, id) {
  const head = el("span", { class: "ks-head" }, el("span", { class: "ks-title", text: result.title }),
    el("span", { class: "ks-badge", "data-type": result.type, text: kindLabel(result.type, result.typeLabel) }));
  if (result.level) head.append(el("span", { class: "ks-level", text: result.level }));
  // A result whose link is not http(s) or site-relative (url null: the core refused it) is shown, but as text.
  const link = result.url === null ? el("div", { class: "ks-link" }, head)
    : el("a", { class: "ks-link", href: result.url, tabindex: "-1" }, head);
  if (result.learns && result.learns.length) {
    link.append(el("span", { class: "ks-learns-head", text: SAY.learns }),
      el("ul", { class: "ks-learns" }, ...result.learns.map((text) => el("li", { text }))));
  }
  if (result.excerpt) link.append(marked(result.excerpt, result.marks));
  return el("li", { id, class: "ks-result", role: "option", "aria-selected": "false" }, link);
}

// The owner's gap log (data-gap-report: the database's URL, data-gap-key: its anonymous key): a function that
// posts a query (and whether a result of it was opened) to knowledge_report_gap, each query once per page, the
// answer ignored; without the URL it sends nothing. A failure is said once on the console: the box works on.
function gapReporter(base, key) {
  if (!base) return () => {};
  let target;
  try { target = new URL("rest/v1/rpc/knowledge_report_gap", base.replace(/\/*$/, "/")); } catch {
    console.warn(`knowledge-search: data-gap-report ${base} is not a URL; no question is reported`);
    return () => {};
  }
  const sent = new Set();
  let warned = false;
  return (query, chosen = false) => {
    if (!query || sent.has(query)) return;
    sent.add(query);
    fetch(target, { method: "POST", keepalive: true, credentials: "omit", referrerPolicy: "no-referrer",
                    headers: { "Content-Type": "application/json", ...(key ? { apikey: key, Authorization: `Bearer ${key}` } : {}) },
                    body: JSON.stringify({ query_text: query, chosen }) })
      .then((response) => { if (!response.ok) throw new Error(`HTTP ${response.status}`); })
      .catch((error) => {
        if (!warned) console.warn(`knowledge-search: the gap report to ${target.origin} failed (${error.message})`);
        warned = true;
      });
  };
}

function filter(label, all) {
  return el("select", { class: "ks-filter", "aria-label": label, hidden: "" }, el("option", { value: "", text: all }));
}

function mount(container) {
  const n = ++boxes;
  const bundle = container.dataset.bundle ? new URL(container.dataset.bundle, document.baseURI)
    : new URL("./", import.meta.url);
  const recentKey = `knowledge-search:recent:${bundle.href}`;
  const input = el("input", { type: "search", class: "ks-input", role: "combobox", "aria-autocomplete": "list",
    "aria-expanded": "false", "aria-controls": `ks-list-${n}`, "aria-label": SAY.box,
    ...(n === 1 ? { "aria-keyshortcuts": "/ Control+K Meta+K" } : {}),
    placeholder: SAY.placeholder, autocomplete: "off", spellcheck: "false", maxlength: MAX_QUERY });
  const type = filter(SAY.type, SAY.allTypes);
  const level = filter(SAY.level, SAY.allLevels);
  const version = filter(SAY.version, SAY.newest);  // shown on a site with versions; left empty: the newest (ranking/facets.py)
  const language = filter(SAY.language, SAY.auto);  // shown on a site in several languages; left empty: ranking/facets.py's rule
  const status = el("p", { class: "ks-status", role: "status" });
  const list = el("ul", { class: "ks-results", id: `ks-list-${n}`, role: "listbox", "aria-label": SAY.results,
    hidden: "" });
  const root = el("div", { class: "ks", hidden: "" }, el("div", { class: "ks-bar" }, input, type, level, version, language), status,
    list);
  let index = null, results = [], active = -1, latest = 0, timer = 0;
  const gaps = gapReporter(container.dataset.gapReport, container.dataset.gapKey || "");

  function load() {
    index ??= open(bundle).then((opened) => {
      const every = (values, label) => (values.length ? [...values, { value: "all", label }] : []);
      const kinds = opened.filters.types.map(({ value, label }) => ({ value, label: kindLabel(value, label) }));
      for (const [select, values] of [[type, kinds], [level, opened.filters.levels],
        [version, every(opened.filters.versions, SAY.allVersions)], [language, every(opened.filters.languages, SAY.allLanguages)]]) {
        select.append(...values.map(({ value, label }) => el("option", { value, text: label })));
        select.hidden = values.length < 2;
      }
      return opened;
    }, (error) => { index = null; throw error; });
    return index;
  }

  function move(to) {
    list.children[active]?.setAttribute("aria-selected", "false");
    active = to;
    const chosen = list.children[to];
    if (!chosen) return input.removeAttribute("aria-activedescendant");
    chosen.setAttribute("aria-selected", "true");
    input.setAttribute("aria-activedescendant", chosen.id);
    chosen.scrollIntoView({ block: "nearest" });
  }

  // The student is done with this query (the list closes; `chosen`: on a result they opened): the owner's gap
  // log may hear of it.
  function close(chosen = false) {
    gaps(list.dataset.query, chosen);
    expand(false);
  }

  function expand(shown) {
    shown = shown && results.length > 0;
    list.hidden = !shown;
    input.setAttribute("aria-expanded", String(shown));
    if (!shown) move(-1);
  }

  // The list says which query and filters it answers (data-query, data-type, data-level, data-version,
  // data-language).
  // An empty query shows the recent searches (data-recent).
  function show(found, query, chosen = {}) {
    const recent = query ? [] : stored(localStorage, recentKey, []).filter((q) => typeof q === "string").slice(0, RECENT);
    results = query ? found : recent;
    move(-1);
    Object.assign(list.dataset, { query, type: chosen.type || "", level: chosen.level || "", version: chosen.version || "",
                                  language: chosen.language || "", recent: String(recent.length) });
    list.replaceChildren(...(query ? found.map((result, i) => option(result, `ks-${n}-${i}`))
      : recent.map((q, i) => recentOption(q, `ks-${n}-${i}`))));
    status.textContent = !query ? "" : found.length ? SAY.count(found.length) : SAY.none(query);
    expand(true);
  }

  // A result was chosen: its query joins the recent searches, and its words are handed to the page it opens.
  function remember(result) {
    const query = list.dataset.query;
    if (!query || !result) return;
    store(localStorage, recentKey, [query, ...stored(localStorage, recentKey, []).filter((q) => q !== query)].slice(0, RECENT));
    if (result.url) {
      const target = new URL(result.url, location.href);
      store(sessionStorage, LANDING, { path: target.pathname, terms: result.terms || [], readings: result.readings || [] });
    }
  }

  // Every query gets a number; an answer is shown only if no later query has started since, so a slow
  // early answer never replaces a later one.
  async function run() {
    clearTimeout(timer);
    const mine = ++latest;
    const query = input.value.trim();
    const chosen = { type: type.value || null, level: level.value || null, version: version.value || null,
                     language: language.value || null };
    if (!query) return show([], "");
    try {
      const opened = await load();
      const found = await opened.search(query, { k: SHOWN, ...chosen });
      if (mine === latest) show(found, query, chosen);
    } catch (error) {
      if (mine === latest) {
        show([], "");
        status.textContent = SAY.failed(error.message);
      }
    }
  }

  // Also while an input method is composing: the kana typed so far (はんべつしき) already finds the box, before
  // the student picks the kanji. Keys that the input method uses (Enter, arrows) are left to it below.
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(run, DEBOUNCE_MS);
  });
  input.addEventListener("focus", () => {
    load().catch(() => {});
    if (!input.value.trim()) show([], "");  // the recent searches
    expand(true);
  });
  input.addEventListener("keydown", (event) => {
    if (event.isComposing) return;
    const count = results.length;
    if ((event.key === "ArrowDown" || event.key === "ArrowUp") && count) {
      event.preventDefault();
      expand(true);
      const step = event.key === "ArrowDown" ? 1 : -1;
      move(active < 0 ? (step > 0 ? 0 : count - 1) : (active + step + count) % count);
    } else if (event.key === "Enter" && count && !list.hidden) {
      event.preventDefault();
      list.children[Math.max(active, 0)].querySelector("a, button")?.click();
    } else if (event.key === "Escape") {
      event.preventDefault();  // the first Escape closes the list; the next one clears the field
      if (!list.hidden) close();
      else if (input.value) {
        gaps(list.dataset.query);  // a query with no result has no list to close: leaving it is clearing it
        input.value = "";
        run();
      }
    }
  });
  for (const select of [type, level, version, language]) select.addEventListener("change", run);
  list.addEventListener("click", (event) => {
    const again = event.target.closest("button[data-query]");
    if (again) {  // a recent search: searched again
      input.value = again.dataset.query;
      input.focus();
      return run();
    }
    const item = event.target.closest("[role=option]");
    if (item && list.dataset.query) remember(results[[...list.children].indexOf(item)]);
    close(Boolean(item));
  });
  if (n === 1) {  // `/` (outside a field) and Ctrl+K / Cmd+K go to the first box of the page
    document.addEventListener("keydown", (event) => {
      const typing = event.target.closest?.("input, textarea, select, [contenteditable]:not([contenteditable=false])");
      const slash = event.key === "/" && !event.ctrlKey && !event.metaKey && !event.altKey && !typing;
      const k = (event.key === "k" || event.key === "K") && (event.ctrlKey || event.metaKey) && !event.altKey;
      if ((slash || k) && !root.hidden) {
        event.preventDefault();
        input.focus();
        input.select();
      }
    });
  }
  document.addEventListener("pointerdown", (event) => { if (!root.contains(event.target)) close(); });
  root.addEventListener("focusout", (event) => { if (!root.contains(event.relatedTarget)) close(); });
  window.addEventListener("pagehide", () => gaps(list.dataset.query));

  container.replaceChildren(root);
  stylesheet().then(() => { root.hidden = false; });
}

markLanding();
window.addEventListener("hashchange", markLanding);  // a result on the page already open
for (const container of document.querySelectorAll(".knowledge-search")) {
  if (!container.dataset.mounted) {
    container.dataset.mounted = "true";
    mount(container);
  }
}
