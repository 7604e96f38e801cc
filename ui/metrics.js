// A parser of the Prometheus text format (0.0.4) that cairnd's /metrics answers, and the few
// look-ups the dashboard needs from it. Pure functions: no DOM, no I/O.

// Parses label pairs `a="x",b="y"` starting at text[i] (just after `{`); returns [labels, index
// after the closing `}`].
function parseLabels(text, i) {
  const labels = {};
  while (i < text.length) {
    while (text[i] === " " || text[i] === ",") i++;
    if (text[i] === "}") return [labels, i + 1];
    const eq = text.indexOf("=", i);
    if (eq < 0 || text[eq + 1] !== '"') throw new Error(`bad label at ${i}`);
    const name = text.slice(i, eq).trim();
    let value = "";
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\\") {
        j++;
        value += text[j] === "n" ? "\n" : text[j];
      } else {
        value += text[j];
      }
    }
    if (j >= text.length) throw new Error("unterminated label value");
    labels[name] = value;
    i = j + 1;
  }
  throw new Error("unterminated label set");
}

function parseValue(s) {
  if (s === "+Inf") return Infinity;
  if (s === "-Inf") return -Infinity;
  if (s === "NaN") return NaN;
  const v = Number(s);
  if (Number.isNaN(v)) throw new Error(`bad value '${s}'`);
  return v;
}

// Returns {families: Map(name -> {name, help, type}), samples: [{name, labels, value}]}. Lines it
// cannot read are counted in `bad` rather than thrown, so that one odd line hides nothing else.
export function parseMetrics(text) {
  const families = new Map();
  const samples = [];
  let bad = 0;
  const family = (name) => {
    if (!families.has(name)) families.set(name, { name, help: "", type: "untyped" });
    return families.get(name);
  };
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    if (line.startsWith("#")) {
      const m = /^#\s+(HELP|TYPE)\s+(\S+)\s*(.*)$/.exec(line);
      if (m && m[1] === "HELP") family(m[2]).help = m[3].replace(/\\n/g, "\n").replace(/\\\\/g, "\\");
      if (m && m[1] === "TYPE") family(m[2]).type = m[3];
      continue;
    }
    try {
      const nameEnd = line.search(/[{\s]/);
      if (nameEnd <= 0) throw new Error("no value");
      const name = line.slice(0, nameEnd);
      let labels = {};
      let rest = nameEnd;
      if (line[nameEnd] === "{") [labels, rest] = parseLabels(line, nameEnd + 1);
      const fields = line.slice(rest).trim().split(/\s+/);
      samples.push({ name, labels, value: parseValue(fields[0]) });
    } catch {
      bad++;
    }
  }
  return { families, samples, bad };
}

// The family a sample belongs to: histogram and summary samples carry a suffix.
export function familyOf(name, families) {
  if (families.has(name)) return name;
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (name.endsWith(suffix) && families.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length);
  }
  return name;
}

// The sum of the samples named `name` whose labels include `where`; null when there is none.
export function sumOf(parsed, name, where = {}) {
  let total = null;
  for (const s of parsed.samples) {
    if (s.name !== name) continue;
    if (!Object.entries(where).every(([k, v]) => s.labels[k] === String(v))) continue;
    total = (total ?? 0) + s.value;
  }
  return total;
}

// Label set as Prometheus writes it, for display.
export function labelText(labels) {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}
